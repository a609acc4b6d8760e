import { delegatingStore } from "./complete-store.js";
import { StoreConflictError } from "./errors.js";
import type { IpamStore, PoolRef, StoredPool, StoreWrite, Version } from "./store.js";

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
  /** The call's allocation commits only if this pool is still at `version` (undefined: still absent). */
  fence(ref: PoolRef, version: Version | undefined): void;
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

export function callCommit(store: IpamStore): CallCommit {
  /** Pools handed on; undefined: known to be absent (no pool written yet). */
  const ready = new Map<string, StoredPool | undefined>();
  const fences = new Map<string, StoreWrite & { kind: "check-pool" }>();
  const id = (ref: PoolRef) => `${ref.network}\u0000${ref.cidr}`;
  const readPool = (ref: PoolRef): Promise<StoredPool | undefined> => {
    if (!ready.has(id(ref))) return store.readPool(ref);
    const handed = ready.get(id(ref));
    ready.delete(id(ref));
    return Promise.resolve(handed);
  };
  /** Whether every fenced pool is still at the version the choice saw. */
  const fencesHold = async (): Promise<boolean> => {
    for (const fence of fences.values()) if ((await store.readPool(fence.ref))?.version !== fence.expected) return false;
    return true;
  };
  /**
   * An allocation's commit (it has a reserve step) carries the call's fences. On a conflict, a
   * broken fence asks for a fresh plan; with every fence holding, the conflict is the commit's own
   * (the address taken, a claim there) and goes back to the inner IPAM's retry, as unfenced.
   */
  const commit = async (writes: readonly StoreWrite[]) => {
    if (fences.size === 0 || !writes.some((w) => w.kind === "reserve")) return store.commit(writes);
    try {
      return (await store.commit([...writes, ...fences.values()])).slice(0, writes.length);
    } catch (error) {
      if (!(error instanceof StoreConflictError) || (await fencesHold())) throw error;
      throw new FenceBrokenError();
    }
  };
  return {
    store: delegatingStore(store, { readPool, commit }),
    hand: (ref, stored) => {
      ready.set(id(ref), stored);
    },
    fence: (ref, expected) => {
      fences.set(id(ref), { kind: "check-pool", ref, expected });
    },
  };
}
