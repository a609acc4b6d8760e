import { MAX_FENCED_BLOCKS } from "./block-plan.js";
import { delegatingStore } from "./complete-store.js";
import { isOutcomeUnknown, StoreConflictError } from "./errors.js";
import { type AttachmentKey, sameKey } from "./key.js";
import type { Pool } from "./pool.js";
import type { ClaimRef, IpamStore, PoolRef, StoredPool, StoreWrite, Version } from "./store.js";

/**
 * Per-node blocks, the executor's commit: one call's hand-off of the block pools it has just read
 * (or recalled) to its inner IPAM, and the fences its plan named. Choosing a block and then writing
 * it (or finding a key and releasing it) cost one read, not two. A pool handed on stale costs only
 * a compare-and-swap conflict and a fresh read: the write is still conditional on the version, so
 * safety never rests on the hand-off. Per call, never shared: a read handed to a concurrent call
 * of the same block could be older than that call's own, and a release finding no key in it would
 * write nothing that could fail — a DEL missed.
 */
export interface CallCommit {
  /** The store as the call's inner IPAM sees it: pools handed on, allocation commits fenced. */
  readonly store: IpamStore;
  /** The pool as just read or recalled, or undefined: no pool there (as read, or a block just claimed). */
  hand(ref: PoolRef, stored: StoredPool | undefined): void;
  /** The call's allocation commits only if this fence still holds. */
  fence(fence: PoolFence): void;
}

/** A block pool the call's choice rested on, as the commit must still find it. */
export interface PoolFence {
  readonly ref: PoolRef;
  /** The pool as the choice knew it; undefined: absent. */
  readonly stored: StoredPool | undefined;
  /** The pool a touch creates where none is (an empty pool of the block). */
  readonly empty: Pool;
  /** The first unclaimed block: on stores without entry-level commits, its affinity claim must still be absent. */
  readonly unclaimed?: ClaimRef;
}

/**
 * A fenced allocation's commit met a conflict and a pool its choice rested on changed since it was
 * seen. Nothing was written; the caller plans again from fresh reads. Not a StoreConflictError, so
 * the inner IPAM does not retry the same choice with the same stale fence.
 */
export class FenceBrokenError extends Error {
  constructor() {
    super("a pool this allocation's choice rested on changed; plan again");
    this.name = "FenceBrokenError";
  }
}

const id = (ref: PoolRef) => `${ref.network}\u0000${ref.cidr}`;

/**
 * `key`: the key an ADD places (a write placing it is fenced). Two ways to fence (DESIGN.md, "How
 * a fence is applied"): with entry-level commits and at most MAX_FENCED_BLOCKS fences,
 * compare-only steps in the allocation's own transaction; otherwise, before each write placing
 * the key, a compare-and-swap of each fenced pool onto itself at the version the choice saw (a
 * "touch": it changes nothing but the version, so a writer that read it before fails) and a fresh
 * read of the first unclaimed block's affinity claim.
 */
export function callCommit(store: IpamStore, key?: AttachmentKey): CallCommit {
  /** Pools handed on; undefined: known to be absent (no pool written yet). */
  const ready = new Map<string, StoredPool | undefined>();
  const fences = new Map<string, PoolFence>();
  /** Each pool's version as the call last read it (or was handed it). */
  const seen = new Map<string, Version | undefined>();
  const readPool = async (ref: PoolRef): Promise<StoredPool | undefined> => {
    const handed = ready.has(id(ref));
    const stored = handed ? ready.get(id(ref)) : await store.readPool(ref);
    ready.delete(id(ref));
    seen.set(id(ref), stored?.version);
    return stored;
  };
  const atomic = atomicFences(store, fences);
  const touched = touchedFences(store, fences, key, seen);
  // one transaction holds a bounded number of compares: past it, touches (a borrowing node)
  const inTransaction = () => store.capabilities.entryWrites && fences.size <= MAX_FENCED_BLOCKS;
  const commit = (writes: readonly StoreWrite[]) => (inTransaction() ? atomic.commit(writes) : touched.commit(writes));
  return {
    store: delegatingStore(store, { readPool, writePool: touched.writePool, commit }),
    hand: (ref, stored) => {
      ready.set(id(ref), stored);
    },
    fence: (fence) => {
      fences.set(id(fence.ref), fence);
    },
  };
}

/**
 * Entry-level commits: an allocation's commit (it has a reserve step) carries the call's fences as
 * `check-pool` steps. On a conflict, a broken fence asks for a fresh plan; with every fence
 * holding, the conflict is the commit's own (the address taken, a claim there) and goes back to
 * the inner IPAM's retry, as unfenced.
 */
function atomicFences(store: IpamStore, fences: ReadonlyMap<string, PoolFence>): Pick<IpamStore, "commit"> {
  const steps = (): StoreWrite[] => [...fences.values()].map((f) => ({ kind: "check-pool", ref: f.ref, expected: f.stored?.version }));
  const fencesHold = async (): Promise<boolean> => {
    for (const f of fences.values()) if ((await store.readPool(f.ref))?.version !== f.stored?.version) return false;
    return true;
  };
  return {
    commit: async (writes) => {
      if (fences.size === 0 || !writes.some((w) => w.kind === "reserve")) return store.commit(writes);
      try {
        return (await store.commit([...writes, ...steps()])).slice(0, writes.length);
      } catch (error) {
        if (!(error instanceof StoreConflictError) || (await fencesHold())) throw error;
        throw new FenceBrokenError();
      }
    },
  };
}

/**
 * Every write that places the key is preceded by the fences, one by one — each fenced pool
 * touched at the version the choice saw (then at the touch's, so a retried write touches again),
 * the unclaimed block's claim read afresh. Any change since the choice breaks a fence, and nothing
 * the call cares about was written yet. An entry-level "reserve" does not conflict with a touch of
 * its pool, so it is sent with a compare of its pool at the version this call read (`seen`).
 */
function touchedFences(
  store: IpamStore,
  fences: Map<string, PoolFence>,
  key: AttachmentKey | undefined,
  seen: ReadonlyMap<string, Version | undefined>,
): Pick<IpamStore, "writePool" | "commit"> {
  const places = (w: StoreWrite) =>
    key !== undefined &&
    ((w.kind === "pool" && w.pool.forKey(key) !== undefined) || (w.kind === "reserve" && sameKey(w.reservation.key, key)));
  const touchAll = async (): Promise<void> => {
    for (const [at, fence] of fences) fences.set(at, await touch(store, fence));
  };
  return {
    writePool: async (ref, pool, expected) => {
      if (fences.size > 0 && places({ kind: "pool", ref, pool, expected })) await touchAll();
      return store.writePool(ref, pool, expected);
    },
    commit: async (writes) => {
      if (fences.size === 0 || !writes.some(places)) return store.commit(writes);
      await touchAll();
      const compares = writes.flatMap((w): StoreWrite[] =>
        w.kind === "reserve" ? [{ kind: "check-pool", ref: w.ref, expected: seen.get(id(w.ref)) }] : [],
      );
      return (await store.commit([...writes, ...compares])).slice(0, writes.length);
    },
  };
}

/** One fence of a whole-pool store, applied: the fence as it now stands, or FenceBrokenError. */
async function touch(store: IpamStore, fence: PoolFence): Promise<PoolFence> {
  try {
    if (fence.unclaimed !== undefined) {
      if ((await store.readClaim(fence.unclaimed, { fresh: true })) !== undefined) throw new FenceBrokenError();
      return fence;
    }
    const pool = fence.stored?.pool ?? fence.empty;
    const version = await store.writePool(fence.ref, pool, fence.stored?.version);
    return { ...fence, stored: { pool, version } };
  } catch (error) {
    // changed since seen, or a touch of unknown outcome (it changes no content): plan again
    if (error instanceof StoreConflictError || isOutcomeUnknown(error)) throw new FenceBrokenError();
    throw error;
  }
}
