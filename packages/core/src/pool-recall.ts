import { delegatingStore } from "./delegating-store.js";
import type { IpamStore, PoolRef, StoredPool, StoreWrite, Version } from "./store.js";

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
 * changed, and the retry reads afresh). A choice that would write nothing is never made from it.
 * A pool is forgotten on any failed write, and on entry-level steps (whose new pool it cannot know).
 * A store that offers recallPool itself is returned unchanged.
 */
export function withPoolRecall(store: IpamStore, options: PoolRecallOptions = {}): IpamStore {
  // a store that recalls its own pools (etcd: its refreshed cache, which also folds in its own
  // entry-level steps) knows better than this wrapper, which must forget pools on those steps
  if (store.recallPool !== undefined) return store;
  const limit = options.limit ?? 10_000;
  const known = new Map<string, StoredPool>();
  const id = (ref: PoolRef) => `${ref.network}\u0000${ref.cidr}`;
  const remember = (ref: PoolRef, stored: StoredPool | undefined): void => {
    known.delete(id(ref));
    if (stored === undefined) return;
    known.set(id(ref), stored);
    if (known.size > limit) known.delete(known.keys().next().value as string);
  };
  const poolSteps = (writes: readonly StoreWrite[]) =>
    writes.flatMap((w, i) => (w.kind === "pool" || w.kind === "reserve" || w.kind === "unreserve" ? [{ write: w, i }] : []));

  const overrides: Partial<IpamStore> = {
    async readPool(ref) {
      const stored = await store.readPool(ref);
      remember(ref, stored);
      return stored;
    },
    async writePool(ref, pool, expected) {
      known.delete(id(ref));
      const version = await store.writePool(ref, pool, expected);
      remember(ref, { pool, version });
      return version;
    },
    recallPool: (ref) => known.get(id(ref)),
  };
  const commit = store.commit;
  if (commit !== undefined) {
    overrides.commit = async (writes) => {
      const steps = poolSteps(writes);
      for (const { write } of steps) known.delete(id(write.ref));
      const versions: Version[] = await commit.call(store, writes);
      for (const { write, i } of steps) {
        const version = versions[i];
        if (write.kind === "pool" && version !== undefined) remember(write.ref, { pool: write.pool, version });
      }
      return versions;
    };
  }
  return delegatingStore(store, overrides);
}
