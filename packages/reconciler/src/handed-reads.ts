import { delegatingStore, type IpamStore, poolId, type StoredPool } from "@ipamkit/core";

/**
 * The store with each pool's observed read handed to the first read of that pool, so that a
 * pool's release costs its write, not another read first. Every later read of the pool goes to
 * the store. A hand-off gone stale (the pool changed since it was observed) costs one
 * compare-and-swap conflict and a fresh read, never a wrong write: every write is conditional on
 * the version read (the storage contract), and releaseAllIf judges the fresh read again.
 */
export function handingOnReads(store: IpamStore, observed: ReadonlyMap<string, StoredPool>): IpamStore {
  const ready = new Map(observed);
  return delegatingStore(store, {
    readPool(ref) {
      const id = poolId(ref);
      const handed = ready.get(id);
      if (handed === undefined) return store.readPool(ref);
      ready.delete(id);
      return Promise.resolve(handed);
    },
  });
}
