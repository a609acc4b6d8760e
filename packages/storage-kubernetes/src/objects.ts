/** The Whereabouts custom resources as plain JSON objects, and the annotations ipamkit adds. */

export const GROUP = "whereabouts.cni.cncf.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

export const IPPOOL = { kind: "IPPool", plural: "ippools" } as const;
export const RESERVATION = { kind: "OverlappingRangeIPReservation", plural: "overlappingrangeipreservations" } as const;
export const NODE_SLICE_POOL = { kind: "NodeSlicePool", plural: "nodeslicepools" } as const;
/** A namespaced kind the object API serves; `group`/`version` default to Whereabouts' (leases name theirs). */
export interface Kind {
  readonly kind: string;
  readonly plural: string;
  readonly group?: string;
  readonly version?: string;
}

/**
 * Annotations ipamkit writes (Whereabouts ignores them and keeps them on its own writes, which
 * patch only `spec`):
 * - `write` changes on every ipamkit write, so even a write of identical content gets a new
 *   resourceVersion (kube-apiserver skips no-op updates; fencing needs the version to move).
 * - `lastOffset`: the round-robin cursor of an IPPool.
 * - `ifnames`: on an IPPool whose CRD prunes entries' `ifname` (Whereabouts < 0.8), each entry's
 *   interface, tagged with its container id (ippool.ts), so ipamkit's exact keys survive pruning.
 * - `staleAllocations` (`ipamkit.io/allocations`): an address count older versions wrote; any
 *   other writer made it stale, so it is no longer written, and every write removes it.
 * - `network` and `node` on an IPPool: whose pool it is (a name cannot say: `a-b-10.0.0.0-24` is
 *   network `a-b`'s pool or node `b`'s slice pool of network `a`); `node` only on a node's slice pool.
 * - `network`, `address` (the claim) and `pool-network`, `pool-node`, `range` (the holding pool): on an
 *   OverlappingRangeIPReservation, which pool holds which
 *   address — so names are never parsed back (Whereabouts keeps the IP only in the name); and
 *   `ifname`, the claim's interface, for an ORIP CRD from before v0.8 that prunes `spec.ifname`.
 */
export const ANNOTATION = {
  write: "ipamkit.io/write",
  lastOffset: "ipamkit.io/last-offset",
  ifnames: "ipamkit.io/ifnames",
  ifname: "ipamkit.io/ifname",
  staleAllocations: "ipamkit.io/allocations",
  network: "ipamkit.io/network",
  poolNetwork: "ipamkit.io/pool-network",
  node: "ipamkit.io/node",
  poolNode: "ipamkit.io/pool-node",
  range: "ipamkit.io/range",
  address: "ipamkit.io/address",
} as const;

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [field: string]: unknown;
}

/** A custom object as read: everything ipamkit does not interpret is kept and written back. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  [field: string]: unknown;
}

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A copy of `base` (or a new object) with fresh metadata for a write: name, namespace, annotations. */
export function objectForWrite(
  kind: Kind,
  base: KubeObject | undefined,
  meta: { name: string; namespace: string; annotations: Record<string, string | undefined> },
): KubeObject {
  const metadata: ObjectMeta = { ...(base?.metadata ?? {}), name: meta.name, namespace: meta.namespace };
  const annotations: Record<string, string> = { ...(metadata.annotations ?? {}) };
  for (const [key, value] of Object.entries(meta.annotations)) {
    if (value === undefined) delete annotations[key];
    else annotations[key] = value;
  }
  metadata.annotations = annotations;
  return { ...(base ?? {}), apiVersion: API_VERSION, kind: kind.kind, metadata };
}
