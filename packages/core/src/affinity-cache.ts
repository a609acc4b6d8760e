import { delegatingStore } from "./delegating-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { claimId, type IpamStore, type StoredClaim } from "./store.js";

/** What a process remembers of block-affinity claims; one may serve several store instances of one backend. */
export interface AffinityMemory {
  readonly claimed: Map<string, StoredClaim>;
  readonly unclaimed: Set<string>;
}

export function createAffinityMemory(): AffinityMemory {
  return { claimed: new Map(), unclaimed: new Set() };
}

export interface AffinityCacheOptions {
  /**
   * Whether this process is, for now, the only one that allocates for this node on the affinity
   * network (`<network>-node-blocks`, core's `affinityNetworkOf`) — the node-local agent when
   * every config of the network says `agent_required`. Asked at each affinity read; once false
   * for a network it should stay false. While true, a block read as unclaimed is also remembered,
   * and a node's steady ADD and DEL read no affinity claim (DESIGN.md, per-node blocks). Without
   * it (default) an unclaimed block is read afresh on every call.
   */
  soleWriter?: (affinityNetwork: string) => boolean;
  /**
   * The memory to use: share one between store instances of the same backend that may be in use
   * at once (a client replaced after its kubeconfig was rewritten, while calls on the old one
   * finish), so that neither remembers a block as unclaimed that the other has claimed.
   */
  memory?: AffinityMemory;
}

/**
 * A store whose block-affinity claims, once seen, are remembered (for a long-lived process such as
 * the node-local agent). ipamkit never deletes an affinity claim, so a remembered one stays true;
 * and if an operator did delete one, safety would not suffer: every address is still reserved by
 * compare-and-swap in its block pool — affinity only spreads the writes (DESIGN.md). With
 * `soleWriter`, blocks read as unclaimed are remembered too, and forgotten whenever this process
 * tries to claim one (so a block another node took costs one failed claim, then a fresh read).
 * A read with `fresh` goes to the store and updates the memory. Every other call, and every
 * other claim, goes straight to the store.
 */
export function withAffinityCache(store: IpamStore, options: AffinityCacheOptions = {}): IpamStore {
  const { claimed, unclaimed } = options.memory ?? createAffinityMemory();
  const soleWriter = options.soleWriter ?? (() => false);
  return delegatingStore(store, {
    async readClaim(ref, readOptions) {
      if (!isAffinityNetwork(ref.network)) return store.readClaim(ref, readOptions);
      const id = claimId(ref);
      const fresh = readOptions?.fresh === true;
      const hit = fresh ? undefined : claimed.get(id);
      if (hit !== undefined) return hit;
      const sole = soleWriter(ref.network);
      if (sole && !fresh && unclaimed.has(id)) return undefined;
      unclaimed.delete(id);
      const read = await store.readClaim(ref, readOptions);
      if (read !== undefined) claimed.set(id, read);
      else if (sole) unclaimed.add(id);
      return read;
    },
    async writeClaim(ref, claim, expected) {
      if (!isAffinityNetwork(ref.network)) return store.writeClaim(ref, claim, expected);
      // taken by another node, or an outcome not known: read it afresh next time
      unclaimed.delete(claimId(ref));
      const version = await store.writeClaim(ref, claim, expected);
      claimed.set(claimId(ref), { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      claimed.delete(claimId(ref));
      unclaimed.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
  });
}
