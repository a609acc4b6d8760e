import { type AffinityMemory, createAffinityMemory, withAffinityCache } from "./affinity-cache.js";
import { createOwnClaimMemory, type OwnClaimMemory, withOwnClaimMemory } from "./own-claims.js";
import { PoolCache } from "./pool-cache.js";
import { type ClaimRef, claimId, type IpamStore, type PoolRef, type StoredClaim, type StoredPool } from "./store.js";

export interface IpamCacheOptions {
  /** Pools remembered at most; the oldest are forgotten first (default 10,000). */
  poolLimit?: number;
  /** Address claims of this process's own remembered at most; the oldest are forgotten first (default 100,000). */
  claimLimit?: number;
  /**
   * A cache whose block-affinity claims this one shares: one of the same backend that may be in use
   * at once (a client replaced after its kubeconfig was rewritten, while calls on the old one
   * finish), so that each knows the claims the other has seen. Pools and own claims stay apart.
   */
  affinityFrom?: IpamCache;
}

/**
 * What a long-lived process (the node-local agent) remembers of one store, kept across its calls
 * and given to the allocator (`createIpam({ cache })`, `createNodeBlockIpam({ cache })`), which
 * applies it to the store itself. Three memories, each safe without any assumption about other
 * writers (DESIGN.md, "Caches are explicit objects"):
 * - block-affinity claims once seen (ipamkit never deletes one; one read as unclaimed is never
 *   remembered) — affinity-cache.ts;
 * - the address claims this process wrote, with the version its write got: a release deletes its
 *   claim at that version without reading it — own-claims.ts;
 * - each pool as this process last read or wrote it, recalled by per-node blocks only where a
 *   compare-and-swap at its version validates every choice made from it — pool-cache.ts.
 * A process that is not long-lived gives none: every answer then comes from the store.
 */
export class IpamCache {
  private readonly pools: PoolCache;
  private readonly affinity: AffinityMemory;
  private readonly ownClaims: OwnClaimMemory;

  constructor(options: IpamCacheOptions = {}) {
    this.pools = new PoolCache(options.poolLimit === undefined ? {} : { limit: options.poolLimit });
    this.affinity = options.affinityFrom?.affinity ?? createAffinityMemory();
    this.ownClaims = createOwnClaimMemory(options.claimLimit);
  }

  /** The pool as this process last saw it through a {@link watch}ed store, or undefined. */
  recall(ref: PoolRef): StoredPool | undefined {
    return this.pools.recall(ref);
  }

  /**
   * A block-affinity claim as this process has seen it (read or written), or undefined: not seen,
   * or seen unclaimed (never remembered). Claims are never deleted, so one seen stays true.
   */
  recallAffinity(ref: ClaimRef): StoredClaim | undefined {
    return this.affinity.claimed.get(claimId(ref));
  }

  /**
   * `store` as per-node blocks use it: claims answered from and taught to the claim memories, and
   * every pool read or written taught to the pool memory (recalled through {@link recall}).
   */
  watch(store: IpamStore): IpamStore {
    return this.pools.watch(this.watchClaims(store));
  }

  /**
   * `store` with the claim memories only: what the plain allocator (createIpam) uses. It never
   * recalls a pool, so it teaches none (a shared range's pool may be large).
   */
  watchClaims(store: IpamStore): IpamStore {
    return withOwnClaimMemory(withAffinityCache(store, { memory: this.affinity }), { memory: this.ownClaims });
  }
}
