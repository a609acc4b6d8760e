import { StoreConflictError, StoreCorruptError, type StoredPool, type Version } from "@ipamkit/core";
import type { ObjectApi } from "./api.js";
import { STORE_NAME } from "./errors.js";
import type { Kind, KubeObject } from "./objects.js";
import type { ResolvedOptions } from "./options.js";

/** What the Kubernetes store's calls share: one per createKubernetesStore call. */
export interface StoreContext {
  readonly resolved: ResolvedOptions;
  readonly api: ObjectApi;
  readonly namespace: string;
  readonly warn: (message: string) => void;
  /** Learned from a write: this API server's IPPool CRD prunes `ifname` (Whereabouts < 0.8). */
  prunesIfNames: boolean;
  /** The last object seen of each name: written over, so fields ipamkit does not know survive. */
  readonly seen: Map<string, KubeObject>;
  /** The last pool decoded per IPPool name and version: a read at an unchanged version skips decoding. */
  readonly decoded: Map<string, StoredPool>;
}

export function createStoreContext(
  resolved: ResolvedOptions,
  api: ObjectApi,
  onWarning: ((message: string) => void) | undefined,
): StoreContext {
  return {
    resolved,
    api,
    namespace: resolved.namespace,
    warn: onWarning ?? ((message: string) => process.emitWarning(message, { code: "IPAMKIT_KUBERNETES" })),
    prunesIfNames: false,
    seen: new Map(),
    decoded: new Map(),
  };
}

export const label = (ctx: StoreContext, kind: Kind, name: string) => `${kind.kind} ${ctx.namespace}/${name}`;

const seenKey = (kind: Kind, name: string) => `${kind.plural}/${name}`;

function versionOf(ctx: StoreContext, object: KubeObject, kind: Kind, name: string): Version {
  const version = object.metadata?.resourceVersion;
  if (typeof version !== "string" || version === "")
    throw new StoreCorruptError(label(ctx, kind, name), "no metadata.resourceVersion", { component: STORE_NAME });
  return version;
}

/** Keeps `object` as the last seen of its name and returns its version. */
export function remember(ctx: StoreContext, kind: Kind, name: string, object: KubeObject): Version {
  ctx.seen.set(seenKey(kind, name), object);
  return versionOf(ctx, object, kind, name);
}

/** Forgets the last object seen of a name. */
export function forget(ctx: StoreContext, kind: Kind, name: string): void {
  ctx.seen.delete(seenKey(kind, name));
}

/** The object to write over at `expected`: as last seen, or re-read; a different version is a conflict now. */
export async function baseAt(ctx: StoreContext, kind: Kind, name: string, expected: Version): Promise<KubeObject> {
  const last = ctx.seen.get(seenKey(kind, name));
  if (last?.metadata?.resourceVersion === expected) return last;
  const current = await ctx.api.get(kind, name);
  if (current?.metadata?.resourceVersion !== expected) throw new StoreConflictError(label(ctx, kind, name), { component: STORE_NAME });
  return current;
}

/** A create (no expected version) or a PUT guarded by the body's resourceVersion. */
export async function put(ctx: StoreContext, kind: Kind, body: KubeObject, expected: Version | undefined): Promise<KubeObject> {
  return expected === undefined ? ctx.api.create(kind, body) : ctx.api.replace(kind, body);
}
