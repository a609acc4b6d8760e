import { cidrOf, formatIp, parseCidr, StoreConflictError } from "@ipamkit/core";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { createObjectApi, type ObjectApi } from "./api.js";
import { normalizeRange } from "./names.js";
import { type Kind, type KubeObject, NODE_SLICE_POOL } from "./objects.js";

/**
 * Whereabouts' node slices (`node_slice_size`), kept by ipamkit when Whereabouts' node-slice
 * controller is gone: each NodeSlicePool's `status.allocations` (one entry per slice, an empty
 * `nodeName` marking a free one) gets a slice for every node that has none, as that controller
 * assigns them (the first free slice), and a deleted node's slice is freed — only once its per-slice
 * IPPool holds no allocation, so a slice with live addresses never moves. Every write is a replace
 * guarded by resourceVersion; a conflict leaves the pool to the next pass.
 */

export { NODE_SLICE_POOL };

const IPPOOL_KIND: Kind = { kind: "IPPool", plural: "ippools" };

export interface SliceAllocation {
  nodeName: string;
  sliceRange: string;
}

export interface SlicePlan {
  allocations: SliceAllocation[];
  assigned: { node: string; slice: string }[];
  freed: { node: string; slice: string }[];
  /** Nodes left without a slice: none was free. */
  waiting: string[];
}

/**
 * The most slices a NodeSlicePool is divided into here: its `status` is one object, and etcd's
 * request limit (1.5 MiB) holds some 30 000 allocations of ~50 bytes.
 */
export const MAX_SLICES = 1n << 15n;

/** Every slice of `range` of prefix `sliceSize` ("/24" or "24"), in address order, all free. */
export function slicesOf(range: string, sliceSize: string): SliceAllocation[] {
  const cidr = parseCidr(range);
  const size = Number(sliceSize.replace(/^\//, ""));
  const bits = cidr.family === 4 ? 32 : 128;
  if (!Number.isInteger(size) || size < cidr.prefix || size > bits) {
    throw new Error(`sliceSize ${JSON.stringify(sliceSize)} must be a prefix length from /${cidr.prefix} to /${bits}`);
  }
  const count = 1n << BigInt(size - cidr.prefix);
  if (count > MAX_SLICES) {
    throw new Error(
      `sliceSize ${JSON.stringify(sliceSize)} divides ${cidr.text} into ${count} slices, more than ${MAX_SLICES} (one NodeSlicePool object cannot hold them)`,
    );
  }
  const step = 1n << BigInt(bits - size);
  const out: SliceAllocation[] = [];
  for (let i = 0n; i < count; i++) {
    const slice = cidrOf({ family: cidr.family, value: cidr.network + i * step }, size);
    out.push({ nodeName: "", sliceRange: `${formatIp({ family: cidr.family, value: slice.network })}/${size}` });
  }
  return out;
}

/** The allocations a pool should have: deleted nodes' idle slices freed, then a free slice for each node without one. */
export function planNodeSlices(input: {
  range: string;
  sliceSize: string;
  allocations: readonly SliceAllocation[];
  nodes: readonly string[];
  /** Whether a slice still holds addresses (its IPPool has allocations). */
  busy: (allocation: SliceAllocation) => boolean;
}): SlicePlan {
  const allocations = input.allocations.length > 0 ? input.allocations.map((a) => ({ ...a })) : slicesOf(input.range, input.sliceSize);
  const live = new Set(input.nodes);
  const plan: SlicePlan = { allocations, assigned: [], freed: [], waiting: [] };
  for (const a of allocations) {
    if (a.nodeName !== "" && !live.has(a.nodeName) && !input.busy(a)) {
      plan.freed.push({ node: a.nodeName, slice: a.sliceRange });
      a.nodeName = "";
    }
  }
  for (const node of [...input.nodes].sort()) {
    if (allocations.some((a) => a.nodeName === node)) continue;
    const free = allocations.find((a) => a.nodeName === "");
    if (free === undefined) {
      plan.waiting.push(node);
      continue;
    }
    free.nodeName = node;
    plan.assigned.push({ node, slice: free.sliceRange });
  }
  return plan;
}

export interface NodeSlicePass {
  pools: number;
  assigned: { pool: string; node: string; slice: string }[];
  freed: { pool: string; node: string; slice: string }[];
  waiting: { pool: string; node: string }[];
  /** Pools left to the next pass: another writer changed them meanwhile, or they could not be read. */
  skipped: { pool: string; reason: string }[];
}

export interface NodeSliceOptions {
  kubeConfig: KubeConfig;
  /** Whereabouts' namespace (NodeSlicePools and IPPools). */
  namespace: string;
  requestTimeoutMs?: number;
}

/** One pass over every NodeSlicePool of the namespace. */
export async function reconcileNodeSlices(options: NodeSliceOptions): Promise<NodeSlicePass> {
  const api = createObjectApi({
    kubeConfig: options.kubeConfig,
    namespace: options.namespace,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    pageSize: 500,
  });
  try {
    const nodes = (await options.kubeConfig.makeApiClient(CoreV1Api).listNode()).items.map((n) => n.metadata?.name ?? "").filter(Boolean);
    const pools = await api.list(NODE_SLICE_POOL);
    const poolNames = new Set((await api.list(IPPOOL_KIND)).map((p) => p.metadata?.name ?? ""));
    const pass: NodeSlicePass = { pools: pools.length, assigned: [], freed: [], waiting: [], skipped: [] };
    for (const pool of pools) await passOne(api, pool, nodes, poolNames, pass);
    return pass;
  } finally {
    api.close();
  }
}

async function passOne(api: ObjectApi, pool: KubeObject, nodes: string[], poolNames: Set<string>, pass: NodeSlicePass): Promise<void> {
  const name = pool.metadata?.name ?? "";
  const spec = (pool.spec ?? {}) as { range?: unknown; sliceSize?: unknown };
  const status = ((pool as { status?: { allocations?: unknown } }).status ?? {}) as { allocations?: unknown };
  if (typeof spec.range !== "string" || typeof spec.sliceSize !== "string") {
    pass.skipped.push({ pool: name, reason: "spec.range and spec.sliceSize must be strings" });
    return;
  }
  const allocations = Array.isArray(status.allocations)
    ? status.allocations.map((a: { nodeName?: unknown; sliceRange?: unknown }) => ({
        nodeName: String(a.nodeName ?? ""),
        sliceRange: String(a.sliceRange ?? ""),
      }))
    : [];
  // the per-slice IPPool, named as Whereabouts names it: `<network>-<node>-<slice>`, or `<node>-<slice>` on the unnamed network
  const busy = async (a: SliceAllocation) => {
    for (const candidate of [`${name}-${a.nodeName}-${normalizeRange(a.sliceRange)}`, `${a.nodeName}-${normalizeRange(a.sliceRange)}`]) {
      if (!poolNames.has(candidate)) continue;
      const object = await api.get(IPPOOL_KIND, candidate);
      const held = (object?.spec as { allocations?: object } | undefined)?.allocations;
      if (held !== undefined && Object.keys(held).length > 0) return true;
    }
    return false;
  };
  const busySlices = new Set<string>();
  for (const a of allocations) if (a.nodeName !== "" && !nodes.includes(a.nodeName) && (await busy(a))) busySlices.add(a.sliceRange);
  let plan: SlicePlan;
  try {
    plan = planNodeSlices({ range: spec.range, sliceSize: spec.sliceSize, allocations, nodes, busy: (a) => busySlices.has(a.sliceRange) });
  } catch (error) {
    pass.skipped.push({ pool: name, reason: (error as Error).message });
    return;
  }
  pass.waiting.push(...plan.waiting.map((node) => ({ pool: name, node })));
  if (plan.assigned.length === 0 && plan.freed.length === 0 && allocations.length > 0) return;
  try {
    await api.replace(NODE_SLICE_POOL, { ...pool, status: { allocations: plan.allocations } } as KubeObject);
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error;
    pass.skipped.push({ pool: name, reason: "changed by another writer meanwhile" });
    return;
  }
  pass.assigned.push(...plan.assigned.map((a) => ({ pool: name, ...a })));
  pass.freed.push(...plan.freed.map((a) => ({ pool: name, ...a })));
}
