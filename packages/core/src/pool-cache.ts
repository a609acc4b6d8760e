import { delegatingStore } from "./complete-store.js";
import type { IpamCache } from "./ipam-cache.js";
import { sameKey } from "./key.js";
import type { Pool } from "./pool.js";
import { RecentMap } from "./recent-map.js";
import { type IpamStore, type PoolRef, poolId, type StoredPool, type StoreWrite } from "./store.js";

export interface PoolCacheOptions {
  /** Pools remembered at most; the oldest are forgotten first (default 10,000). */
  limit?: number;
}

/**
 * The pool after a committed reserve or unreserve, or undefined when the cached one is stale for it
 * (a store's own read cache folds its entry-level commits in the same way).
 */
export function foldEntry(pool: Pool, w: Extract<StoreWrite, { kind: "reserve" | "unreserve" }>): Pool | undefined {
  const r = w.reservation;
  const held = pool.atOffset(r.offset);
  if (w.kind === "unreserve") return held !== undefined && sameKey(held.key, r.key) ? pool.without(r.key) : undefined;
  if (held !== undefined || pool.forKey(r.key) !== undefined) return undefined;
  const added = pool.with(r, { moveCursor: false });
  return w.lastOffset === undefined ? added : added.withCursor(w.lastOffset);
}

/**
 * What a long-lived process (the agent) remembers of pools: each as this process last read or
 * wrote it, recalled without a request. The pool part of an {@link IpamCache}, which the allocator
 * is given (`createNodeBlockIpam({ cache })`); it learns from the store calls the allocator makes
 * through {@link PoolCache.watch}.
 *
 * A recalled pool may be stale (another process wrote since). Core uses one only where a
 * compare-and-swap at its version validates every choice made from it (per-node blocks: "the key
 * is not in my only block, and it has room" — the write at that version fails if anything
 * changed, and the retry reads afresh). A choice that would write nothing is never made from it,
 * nor a fact about any pool the commit does not check.
 * A pool is forgotten on a failed `writePool`; a failed commit leaves its pools as last seen (a
 * recall is validated by the next compare-and-swap anyway). An entry-level step of its own (reserve, unreserve) is
 * folded into the remembered pool, whose version stays the one last read: a whole-pool compare or
 * fence at it then fails until a read, while the entry-level steps (which compare only their own
 * address and key) can still be chosen from it.
 */
export class PoolCache {
  private readonly known: RecentMap<StoredPool>;

  constructor(options: PoolCacheOptions = {}) {
    this.known = new RecentMap<StoredPool>(options.limit ?? 10_000);
  }

  /** The pool as this process last saw it, or undefined. */
  recall(ref: PoolRef): StoredPool | undefined {
    return this.known.get(poolId(ref));
  }

  /** `store`, teaching this cache every pool read or written through it. */
  watch(store: IpamStore): IpamStore {
    const known = this.known;
    return delegatingStore(store, {
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
      commit: async (writes) => {
        const before = new Map<string, StoredPool | undefined>();
        for (const w of writes) {
          if (w.kind !== "pool" && w.kind !== "reserve" && w.kind !== "unreserve") continue;
          if (!before.has(poolId(w.ref))) before.set(poolId(w.ref), known.get(poolId(w.ref)));
          known.delete(poolId(w.ref));
        }
        let versions: string[];
        try {
          versions = await store.commit(writes);
        } catch (error) {
          // nothing of it was applied (or, outcome unknown, the next compare-and-swap finds out):
          // the pools stay as last seen
          for (const [id, stored] of before) if (stored !== undefined) known.set(id, stored);
          throw error;
        }
        for (const [i, w] of writes.entries()) this.learnStep(w, versions[i], before);
        return versions;
      },
    });
  }

  private learnStep(w: StoreWrite, version: string | undefined, before: Map<string, StoredPool | undefined>): void {
    if (w.kind === "pool" && version !== undefined) this.known.set(poolId(w.ref), { pool: w.pool, version });
    if (w.kind !== "reserve" && w.kind !== "unreserve") return;
    const id = poolId(w.ref);
    const last = this.known.get(id) ?? before.get(id);
    const pool = last === undefined ? undefined : foldEntry(last.pool, w);
    if (last === undefined || pool === undefined) {
      this.known.delete(id);
      before.set(id, undefined);
    } else this.known.set(id, { pool, version: last.version });
  }
}
