import {
  type ClaimRef,
  claimId,
  delegatingStore,
  type IpamStore,
  poolId,
  type RecalledClaim,
  readClaimsThrough,
  type ScannedClaim,
  type StoredPool,
} from "@ipamkit/core";

/** Reads a pass made before its releases, handed on to them. */
export interface HandedReads {
  /** Each pool as observed, by poolId. */
  pools: ReadonlyMap<string, StoredPool>;
  /** Every claim of these networks as scanned in bulk (a claim not scanned was not there). */
  claims?: { networks: ReadonlySet<string>; scanned: readonly ScannedClaim[] };
}

/**
 * The store with each pool's observed read handed to the first read of that pool, and each
 * scanned claim to the first read of that claim, so that a pool's release costs its write (and
 * its claims' deletes), not more reads first. Every later read goes to the store.
 *
 * A pool handed on stale (changed since observed) costs one compare-and-swap conflict and a fresh
 * read, never a wrong write: every write is conditional on the version read (the storage
 * contract), and releaseAllIf judges the fresh read again. A claim handed on was read before the
 * release writes its pool, which is all a release's claim read must be (core DESIGN.md, "Claims"):
 * its delete at that version fails if anybody wrote the claim since, and the release then
 * repairs it from fresh reads (core's repairClaim).
 */
export function handingOnReads(store: IpamStore, handed: HandedReads): IpamStore {
  const ready = new Map(handed.pools);
  const overrides: Partial<IpamStore> = {
    readPool(ref) {
      const id = poolId(ref);
      const pool = ready.get(id);
      if (pool === undefined) return store.readPool(ref);
      ready.delete(id);
      return Promise.resolve(pool);
    },
  };
  const { claims } = handed;
  if (claims !== undefined) {
    const scanned = new Map(claims.scanned.map((c) => [claimId(c.ref), c.stored]));
    const handedOn = new Set<string>();
    const recall = (ref: ClaimRef): RecalledClaim => {
      const id = claimId(ref);
      if (!claims.networks.has(ref.network) || handedOn.has(id)) return undefined;
      handedOn.add(id);
      return { stored: scanned.get(id) };
    };
    overrides.readClaim = (ref, options) => {
      const known = options?.fresh === true ? undefined : recall(ref);
      return known === undefined ? store.readClaim(ref, options) : Promise.resolve(known.stored);
    };
    // several claims in one request where the store can: the scanned ones cost nothing
    if (store.readClaims !== undefined) overrides.readClaims = (refs) => readClaimsThrough(store, refs, { recall });
  }
  return delegatingStore(store, overrides);
}
