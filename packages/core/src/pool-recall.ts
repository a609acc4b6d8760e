import { delegatingStore } from "./delegating-store.js";
import { RecentMap } from "./recent-map.js";
import { type IpamStore, poolId, type StoredPool } from "./store.js";

export interface PoolRecallOptions {
  /** Pools remembered at most; the oldest are forgotten first (default 10,000). */
  limit?: number;
  /**
   * Whether this process is, for now, the only one that allocates for its node in this pool
   * network (the node-local agent where every config of the network says `agent_required`: the
   * affinity cache's `soleWriter`, asked for the network's affinity network). While true, a pool
   * this process last wrote itself is offered by `recallOwnWrite` too. Default: never.
   */
  soleWriter?: (network: string) => boolean;
}

/** A pool as last seen, and whether this process wrote that version itself. */
interface Known {
  stored: StoredPool;
  ownWrite: boolean;
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
 *
 * With `soleWriter`, {@link IpamStore.recallOwnWrite} offers a pool whose recalled version this
 * process wrote itself (a read of the same version keeps it so; a read of another forgets that it
 * did). Nothing adds one of the node's keys to it behind this process's back, so per-node blocks
 * take "not held here" from it without a read (core's DESIGN.md).
 *
 * A store that offers recallPool itself (etcd's, whose ADDs over several blocks are fenced instead)
 * is returned unchanged, without `recallOwnWrite`.
 */
export function withPoolRecall(store: IpamStore, options: PoolRecallOptions = {}): IpamStore {
  // a store that recalls its own pools (etcd: its refreshed cache, which also folds in its own
  // entry-level steps) knows better than this wrapper, which must forget pools on those steps
  if (store.recallPool !== undefined) return store;
  const known = new RecentMap<Known>(options.limit ?? 10_000);
  const soleWriter = options.soleWriter ?? (() => false);
  const overrides: Partial<IpamStore> = {
    async readPool(ref) {
      const stored = await store.readPool(ref);
      const id = poolId(ref);
      if (stored === undefined) known.delete(id);
      else {
        const before = known.get(id);
        known.set(id, { stored, ownWrite: before?.ownWrite === true && before.stored.version === stored.version });
      }
      return stored;
    },
    async writePool(ref, pool, expected) {
      known.delete(poolId(ref));
      const version = await store.writePool(ref, pool, expected);
      known.set(poolId(ref), { stored: { pool, version }, ownWrite: true });
      return version;
    },
    recallPool: (ref) => known.get(poolId(ref))?.stored,
    recallOwnWrite(ref) {
      const hit = known.get(poolId(ref));
      return hit?.ownWrite === true && soleWriter(ref.network) ? hit.stored : undefined;
    },
  };
  const commit = store.commit;
  if (commit !== undefined) {
    overrides.commit = async (writes) => {
      for (const w of writes) if (w.kind === "pool" || w.kind === "reserve" || w.kind === "unreserve") known.delete(poolId(w.ref));
      const versions = await commit.call(store, writes);
      writes.forEach((w, i) => {
        const version = versions[i];
        if (w.kind === "pool" && version !== undefined) known.set(poolId(w.ref), { stored: { pool: w.pool, version }, ownWrite: true });
      });
      return versions;
    };
  }
  return delegatingStore(store, overrides);
}
