import { attachmentKey } from "@ipamkit/core";
import { type Cluster, POOL_NS, range } from "./cluster.js";

/** The attachment key of a container's net1. */
export const key = (containerId: string) => attachmentKey({ containerId, ifName: "net1" });
/** The pool of `range`, on the default network. */
export const pool = { network: "", cidr: range.cidr.text };
/** Where Whereabouts' custom resources live in these tests. */
export const GROUP = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: POOL_NS };

/** Helpers on the cluster `cluster()` returns when called (each test gets a fresh one). */
export function reconcileFixtures(cluster: () => Cluster) {
  /** An IPPool written as Whereabouts (or anyone else) writes it, straight through the API. */
  async function createRawPool(name: string, cidr: string, allocations: Record<string, unknown>): Promise<void> {
    await cluster().custom.createNamespacedCustomObject({
      ...GROUP,
      plural: "ippools",
      body: { apiVersion: "whereabouts.cni.cncf.io/v1alpha1", kind: "IPPool", metadata: { name }, spec: { range: cidr, allocations } },
    });
  }

  /** `offset:containerId` of every reservation stored in `pool`. */
  async function holders(): Promise<string[]> {
    const stored = await cluster().store.readPool(pool);
    return (stored?.pool.reservations() ?? []).map((r) => `${r.offset}:${r.key.containerId}`);
  }

  return { createRawPool, holders };
}
