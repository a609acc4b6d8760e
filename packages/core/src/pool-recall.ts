import { delegatingStore } from "./delegating-store.js";
import { RecentMap } from "./recent-map.js";
import { type IpamStore, poolId, type StoredPool } from "./store.js";

export interface PoolRecallOptions {
  /** Pools remembered at most; the oldest are forgotten first (default 10,000). */
  limit?: number;
}

/**
 * A store that remembers each pool as this process last read or wrote it, and offers it through
 * {@link IpamStore.recallPool} without a request. Reads and writes still go to the store.
 *
 * A recalled pool may be stale (another process wrote since). Core uses one only where a
 * compare-and-swap at its version validates every choice made from it (per-node blocks: "the key
 * is not in my only block, and it has room" — the write at that version fails if anything
 * changed, and the retry reads afresh). A choice that would write nothing is never made from it,
 * nor a fact about any pool the commit does not check.
 * A pool is forgotten on any failed write, and on entry-level steps (whose new pool it cannot know).
 *
 * A store that offers recallPool itself (etcd's, whose ADDs over several blocks are fenced instead)
 * is returned unchanged.
 */
export function withPoolRecall(store: IpamStore, options: PoolRecallOptions = {}): IpamStore {
  // a store that recalls its own pools (etcd: its refreshed cache, which also folds in its own
  // entry-level steps) knows better than this wrapper, which must forget pools on those steps
  if (store.recallPool !== undefined) return store;
  const known = new RecentMap<StoredPool>(options.limit ?? 10_000);
  const overrides: Partial<IpamStore> = {
    async readPool(ref) {
      const stored = await store.readPool(ref);
      if (stored === undefined) known.delete(poolId(ref));
      else known.set(poolId(ref), stored);
      return stored;
    },
    async writePool(ref, pool, expected) {
      known.delete(poolId(ref));
      const version = await store.writePool(ref, pool, expected);
      known.set(poolId(ref), { pool, version });
      return version;
    },
    recallPool: (ref) => known.get(poolId(ref)),
  };
  const commit = store.commit;
  if (commit !== undefined) {
    overrides.commit = async (writes) => {
      for (const w of writes) if (w.kind === "pool" || w.kind === "reserve" || w.kind === "unreserve") known.delete(poolId(w.ref));
      const versions = await commit.call(store, writes);
      writes.forEach((w, i) => {
        const version = versions[i];
        if (w.kind === "pool" && version !== undefined) known.set(poolId(w.ref), { pool: w.pool, version });
      });
      return versions;
    };
  }
  return delegatingStore(store, overrides);
}
