import { delegatingStore } from "./delegating-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { claimId, type IpamStore, type StoredClaim } from "./store.js";

export interface AffinityCacheOptions {
  /**
   * Whether this process is, for now, the only one that writes this node's allocations on the
   * affinity network (`<network>-node-blocks`, core's `affinityNetworkOf`) — the node-local agent
   * when every config of the network says `agent_required`. Asked before each affinity read; once
   * false for a network it should stay false. While true, a block read as unclaimed is also
   * remembered, and a node's ADD and DEL read no affinity claim at all (DESIGN.md, per-node
   * blocks). Without it (default) an unclaimed block is read afresh on every call.
   */
  soleWriter?: (affinityNetwork: string) => boolean;
}

/**
 * A store whose block-affinity claims, once seen, are remembered (for a long-lived process such as
 * the node-local agent). ipamkit never deletes an affinity claim, so a remembered one stays true;
 * and if an operator did delete one, safety would not suffer: every address is still reserved by
 * compare-and-swap in its block pool — affinity only spreads the writes (DESIGN.md). With
 * `soleWriter`, blocks seen unclaimed are remembered too, and forgotten when a claim of one fails
 * (another node took it) or its outcome is unknown. Every other call, and every other claim, goes
 * straight to the store.
 */
export function withAffinityCache(store: IpamStore, options: AffinityCacheOptions = {}): IpamStore {
  const known = new Map<string, StoredClaim>();
  const unclaimed = new Set<string>();
  const soleWriter = options.soleWriter ?? (() => false);
  return delegatingStore(store, {
    async readClaim(ref) {
      if (!isAffinityNetwork(ref.network)) return store.readClaim(ref);
      const id = claimId(ref);
      const hit = known.get(id);
      if (hit !== undefined) return hit;
      const sole = soleWriter(ref.network);
      if (sole && unclaimed.has(id)) return undefined;
      unclaimed.delete(id);
      const read = await store.readClaim(ref);
      if (read !== undefined) known.set(id, read);
      else if (sole) unclaimed.add(id);
      return read;
    },
    async writeClaim(ref, claim, expected) {
      if (!isAffinityNetwork(ref.network)) return store.writeClaim(ref, claim, expected);
      // taken by another node, or an outcome not known: read it afresh next time
      unclaimed.delete(claimId(ref));
      const version = await store.writeClaim(ref, claim, expected);
      known.set(claimId(ref), { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      known.delete(claimId(ref));
      unclaimed.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
  });
}
