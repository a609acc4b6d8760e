import { randomInt, randomUUID } from "node:crypto";
import { decodeObject } from "./decode.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  invalid,
  invalidValue,
  namespaceNotFound,
  notFound,
  plainError,
} from "./errors.js";
import { clone, deepEqual, type Json, type KubeObject, meta, str } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { rfc3339 } from "./microtime.js";
import { applyPatch } from "./patch.js";
import { schemaErrors } from "./schema.js";
import type { ObjectStore } from "./store.js";
import { isValidNamespace, objectMetaCreateErrors, objectMetaUpdateErrors } from "./validation.js";

/** What the verbs work on. */
export interface Registry {
  readonly store: ObjectStore;
  /** etcd's request limit: a larger object is refused as etcd refuses it. */
  readonly maxObjectBytes: number;
  now(): Date;
}

export interface Target {
  readonly kind: KindSpec;
  readonly namespace: string;
  readonly name: string;
  readonly subresource?: string | undefined;
}

export interface Written {
  readonly code: 200 | 201;
  readonly object: KubeObject;
  readonly warnings: readonly string[];
}

export interface WriteOptions {
  readonly fieldValidation: string | null;
}

/**
 * What etcd's request-size check sees for a write: the stored object plus the transaction around it —
 * its key twice (the compare and the put) and ~16 bytes of framing. Calibrated against kube-apiserver
 * v1.37.2 on etcd 3.7.0, which drops managedFields from an object that would not fit with them: the
 * largest IPPool agrees to the entry (storage-kubernetes' object-size test runs on both).
 */
function requestBytes(kind: KindSpec, object: KubeObject): number {
  const m = meta(object);
  const key = `/registry/${kind.builtIn ? "" : `${kind.group}/`}${kind.plural}/${str(m, "namespace")}/${str(m, "name")}`;
  return Buffer.byteLength(JSON.stringify(object)) + 2 * Buffer.byteLength(key) + 16;
}

export function sized(registry: Registry, kind: KindSpec, object: KubeObject): { object: KubeObject; bytes: number } {
  const bytes = requestBytes(kind, object);
  // kube-apiserver passes etcd's error through unwrapped: HTTP 500, no reason (kubernetes/kubernetes#112152).
  if (bytes > registry.maxObjectBytes) throw plainError("etcdserver: request is too large");
  return { object, bytes };
}

/** A deletion writes no value to etcd (no size limit), but its event still holds the object in the history. */
export const deletion = (object: KubeObject) => ({ object, bytes: Buffer.byteLength(JSON.stringify(object)) });

export function withResourceVersion(object: KubeObject, rv: string): KubeObject {
  meta(object).resourceVersion = rv;
  return object;
}

export const hasFinalizers = (object: KubeObject) => {
  const f = meta(object).finalizers;
  return Array.isArray(f) && f.length > 0;
};

const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** SimpleNameGenerator: the prefix (cut to 58 characters) and 5 random characters. */
function generateName(prefix: string): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
  return prefix.slice(0, 58) + suffix;
}

function kindErrors(kind: KindSpec, object: KubeObject): FieldError[] {
  return [...(kind.builtIn ? [] : schemaErrors(object, kind.schema)), ...(kind.validate?.(object) ?? [])];
}

export function getObject(registry: Registry, target: Target): KubeObject {
  const object = registry.store.get(target.kind.plural, target.namespace, target.name);
  if (object === undefined) throw notFound(target.kind, target.name);
  return object;
}

/** The create flow: system fields, generateName (8 attempts, like RetryGenerateName), validation, AlreadyExists. */
function insert(registry: Registry, kind: KindSpec, incoming: KubeObject, rejectResourceVersion: boolean): KubeObject {
  const namespace = str(meta(incoming), "namespace");
  if (!isValidNamespace(namespace)) throw namespaceNotFound(namespace);
  const resourceVersion = str(meta(incoming), "resourceVersion");
  const generate = str(meta(incoming), "name") === "" && str(meta(incoming), "generateName") !== "";
  for (let attempt = 1; ; attempt++) {
    const object = clone(incoming);
    const m = meta(object);
    m.uid = randomUUID();
    m.creationTimestamp = rfc3339(registry.now());
    for (const key of ["deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "resourceVersion"]) delete m[key];
    if (kind.tracksGeneration) m.generation = 1;
    else delete m.generation;
    if (generate) m.name = generateName(str(m, "generateName"));
    kind.prepareForCreate?.(object);
    const name = str(m, "name");
    const errors = [...objectMetaCreateErrors(m), ...kindErrors(kind, object)];
    if (errors.length > 0) throw invalid(kind.group, kind.kind, name, errors);
    if (rejectResourceVersion && resourceVersion !== "") throw plainError("resourceVersion should not be set on objects to be created");
    const existing = registry.store.get(kind.plural, namespace, name);
    if (existing !== undefined) {
      if (generate && attempt < 8) continue;
      throw alreadyExists(kind, name, meta(existing).deletionTimestamp !== undefined);
    }
    return registry.store.write(kind.plural, "ADDED", undefined, (rv) => sized(registry, kind, withResourceVersion(object, rv))).object;
  }
}

export function createObject(registry: Registry, kind: KindSpec, namespace: string, body: Json, options: WriteOptions): Written {
  const { object, warnings } = decodeObject(body, { kind, namespace, fieldValidation: options.fieldValidation, fromPatch: false });
  return { code: 201, object: insert(registry, kind, object, true), warnings };
}

function checkName(object: KubeObject, name: string): void {
  const actual = str(meta(object), "name");
  if (actual !== name) throw badRequest(`the name of the object (${actual}) does not match the name on the URL (${name})`);
}

/** A PUT whose uid differs: the storage layer's precondition error, passed through with its etcd key. */
const uidPrecondition = ({ kind, namespace, name }: Target, expected: string, actual: string) =>
  conflict(
    kind,
    name,
    `StorageError: invalid object, Code: 4, Key: /registry/${kind.group === "" || kind.builtIn ? "" : `${kind.group}/`}${kind.plural}/${namespace}/${name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${expected}, UID in object meta: ${actual}`,
  );

/** The update flow shared by PUT and PATCH: resourceVersion check, server-owned fields kept, validation, no-op detection. */
function update(registry: Registry, target: Target, existing: KubeObject, incoming: KubeObject, fromPatch: boolean): KubeObject {
  const { kind, name } = target;
  const old = meta(existing);
  const requested = str(meta(incoming), "resourceVersion");
  if (requested !== "" && !/^\d+$/.test(requested))
    throw badRequest(`invalid resource version ${JSON.stringify(requested)}: must be a decimal integer`);
  if (requested === "") {
    if (!kind.allowUnconditionalUpdate && !fromPatch)
      throw invalid(kind.group, kind.plural, name, [
        invalidValue("metadata.resourceVersion", { raw: "0" }, "must be specified for an update"),
      ]);
  } else if (requested !== str(old, "resourceVersion")) throw conflict(kind, name);

  const next = clone(incoming);
  const m = meta(next);
  if (old.generation === undefined) delete m.generation;
  else m.generation = old.generation;
  kind.prepareForUpdate?.(next, existing, target.subresource);
  if (str(m, "uid") === "") m.uid = old.uid ?? "";
  m.creationTimestamp = old.creationTimestamp ?? null;
  for (const key of ["deletionTimestamp", "deletionGracePeriodSeconds"])
    if (m[key] === undefined && old[key] !== undefined) m[key] = old[key] ?? null;
  delete m.managedFields;
  delete m.selfLink;
  const errors = [
    ...objectMetaUpdateErrors(m, old),
    ...(kind.builtIn ? [] : schemaErrors(next, kind.schema)),
    ...(kind.validateUpdate?.(next, existing, target.subresource) ?? []),
  ];
  if (errors.length > 0) throw invalid(kind.group, kind.kind, name, errors);
  if (kind.tracksGeneration && !deepEqual(kind.generationContent(next), kind.generationContent(existing)))
    m.generation = (typeof old.generation === "number" ? old.generation : 0) + 1;

  // The last finalizer removed from an object being deleted (without grace): it goes now.
  if (
    old.deletionTimestamp !== undefined &&
    !hasFinalizers(next) &&
    !(typeof old.deletionGracePeriodSeconds === "number" && old.deletionGracePeriodSeconds > 0)
  )
    return registry.store.write(kind.plural, "DELETED", existing, (rv) => deletion(withResourceVersion(next, rv))).object;

  m.resourceVersion = old.resourceVersion ?? "";
  // etcd3's GuaranteedUpdate writes nothing when the bytes are unchanged: same resourceVersion, no event.
  if (deepEqual(next, existing)) return existing;
  return registry.store.write(kind.plural, "MODIFIED", existing, (rv) => sized(registry, kind, withResourceVersion(next, rv))).object;
}

export function replaceObject(registry: Registry, target: Target, body: Json, options: WriteOptions): Written {
  const { kind, name } = target;
  const { object, warnings } = decodeObject(body, {
    kind,
    namespace: target.namespace,
    fieldValidation: options.fieldValidation,
    fromPatch: false,
  });
  checkName(object, name);
  const uid = str(meta(object), "uid");
  const existing = registry.store.get(kind.plural, target.namespace, name);
  if (existing === undefined) {
    if (target.subresource !== undefined || !kind.allowCreateOnUpdate) throw notFound(kind, name);
    if (uid !== "") throw uidPrecondition(target, uid, "");
    return { code: 201, object: insert(registry, kind, object, false), warnings };
  }
  if (uid !== "" && uid !== str(meta(existing), "uid")) throw uidPrecondition(target, uid, str(meta(existing), "uid"));
  return { code: 200, object: update(registry, target, existing, object, false), warnings };
}

export function patchObject(registry: Registry, target: Target, body: string, contentType: string, options: WriteOptions): Written {
  const existing = getObject(registry, target);
  const patched = applyPatch(existing, body, contentType, target.kind);
  const { object, warnings } = decodeObject(patched, {
    kind: target.kind,
    namespace: target.namespace,
    fieldValidation: options.fieldValidation,
    fromPatch: true,
  });
  checkName(object, target.name);
  return { code: 200, object: update(registry, target, existing, object, true), warnings };
}
