import type { FieldError } from "./errors.js";
import type { Json, KubeObject } from "./json.js";
import { LEASES } from "./leases.js";
import { PODS } from "./pods.js";
import type { Schema } from "./schema.js";
import { WHEREABOUTS_KINDS } from "./whereabouts.js";

/** What the server serves for one kind (all are namespaced). */
export interface ServedKind {
  /** "" for the core group. */
  readonly group: string;
  readonly version: string;
  /** `v1` or `<group>/<version>` */
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly namespaced: true;
  readonly shortNames: readonly string[];
  /** e.g. ["status"] for pods */
  readonly subresources: readonly string[];
  /** The field selectors LIST and WATCH accept. */
  readonly fieldSelectors: readonly string[];
}

/** A kind plus the registry strategy the API server applies to it. */
export interface KindSpec extends ServedKind {
  /** A built-in (typed) kind: decode errors are 400, list items carry no apiVersion/kind. A custom resource otherwise. */
  readonly builtIn: boolean;
  /** The whole object's schema: pruning for every kind, validation for custom resources, decoding for built-ins. */
  readonly schema: Schema;
  readonly tracksGeneration: boolean;
  readonly allowCreateOnUpdate: boolean;
  readonly allowUnconditionalUpdate: boolean;
  /** Accepts application/strategic-merge-patch+json (custom resources never do). */
  readonly strategicMergePatch: boolean;
  /** Field-selector values by field. */
  readonly fields: Readonly<Record<string, (object: KubeObject) => string>>;
  /** What a change to bumps metadata.generation. */
  generationContent(object: KubeObject): Json | undefined;
  /** Defaulting, applied to every decoded object. */
  defaults?(object: KubeObject): void;
  prepareForCreate?(object: KubeObject): void;
  prepareForUpdate?(object: KubeObject, old: KubeObject, subresource: string | undefined): void;
  validate?(object: KubeObject): FieldError[];
  validateUpdate?(object: KubeObject, old: KubeObject, subresource: string | undefined): FieldError[];
  /** DELETE answers the deleted object (pods) rather than a Success Status (the generic registry's default). */
  readonly returnDeletedObject?: boolean;
  /** Graceful deletion: seconds to wait for a DELETE (0 = delete at once). */
  deletionGracePeriod?(object: KubeObject, requested: number | undefined): number;
}

export const KINDS: readonly KindSpec[] = [...WHEREABOUTS_KINDS, PODS, LEASES];

/** The kinds this server serves, for callers that want to know. */
export const SERVED_KINDS: readonly ServedKind[] = Object.freeze(
  KINDS.map(
    (k): ServedKind =>
      Object.freeze({
        group: k.group,
        version: k.version,
        apiVersion: k.apiVersion,
        kind: k.kind,
        listKind: k.listKind,
        plural: k.plural,
        singular: k.singular,
        namespaced: k.namespaced,
        shortNames: k.shortNames,
        subresources: k.subresources,
        fieldSelectors: k.fieldSelectors,
      }),
  ),
);

export function findKind(group: string, version: string, plural: string): KindSpec | undefined {
  return KINDS.find((k) => k.group === group && k.version === version && k.plural === plural);
}
