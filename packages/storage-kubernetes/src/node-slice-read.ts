import { parseCidr } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import { createObjectApi } from "./api.js";
import { NODE_SLICE_POOL } from "./objects.js";
import { loadKubeConfig, resolveNamespace } from "./options.js";

/** Which node's slice to read, and where (the plugin's side of Whereabouts' node slices). */
export interface NodeSliceQuery {
  /** As the store's: a kubeconfig file (read now), a loaded KubeConfig, or client-node's defaults. */
  kubeconfig?: string | KubeConfig;
  /** The pool namespace; default: as the store resolves it (the context's, else kube-system). */
  namespace?: string;
  /** The NodeSlicePool: `network_name`, else the CNI network `name`. */
  name: string;
  node: string;
  /** Deadline of the request in ms (default 10 000). */
  requestTimeoutMs?: number;
}

export interface NodeSliceAnswer {
  /** `namespace/name` of the NodeSlicePool, for messages. */
  pool: string;
  /** Whether the NodeSlicePool exists. */
  exists: boolean;
  /** The slice `status.allocations` assigns to the node (canonical CIDR text); absent when none. */
  slice?: string;
}

/**
 * The node's slice, as Whereabouts' plugin reads it (`GetNodeSlicePoolRange`): the NodeSlicePool
 * of the network in the pool namespace, its `status.allocations` entry whose `nodeName` is the
 * node. One GET. An allocation whose `sliceRange` is not a CIDR counts as none (its controller
 * would have to write it again). API failures are the store's errors (a timeout: retryable).
 */
export async function readNodeSlice(query: NodeSliceQuery): Promise<NodeSliceAnswer> {
  const kubeConfig = loadKubeConfig(query.kubeconfig);
  const namespace = resolveNamespace(kubeConfig, query.namespace);
  const api = createObjectApi({ kubeConfig, namespace, requestTimeoutMs: query.requestTimeoutMs ?? 10_000, pageSize: 1 });
  const pool = `${namespace}/${query.name}`;
  try {
    const object = await api.get(NODE_SLICE_POOL, query.name);
    if (object === undefined) return { pool, exists: false };
    const status = ((object as { status?: { allocations?: unknown } }).status ?? {}) as { allocations?: unknown };
    for (const a of Array.isArray(status.allocations) ? status.allocations : []) {
      const { nodeName, sliceRange } = (a ?? {}) as { nodeName?: unknown; sliceRange?: unknown };
      if (nodeName !== query.node || typeof sliceRange !== "string") continue;
      try {
        return { pool, exists: true, slice: parseCidr(sliceRange).text };
      } catch {
        // not a CIDR: not a slice
      }
    }
    return { pool, exists: true };
  } finally {
    api.close();
  }
}
