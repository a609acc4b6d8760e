import { readClaimsThrough } from "./claims.js";
import { delegatingStore } from "./complete-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { RecentMap } from "./recent-map.js";
import { type ClaimRef, claimId, type IpamStore, type StoredClaim } from "./store.js";

/** The address claims a process wrote, each with the version its write got. */
export type OwnClaimMemory = RecentMap<StoredClaim>;

/** An empty memory of at most `limit` claims; the oldest are forgotten first (default 100,000). */
export function createOwnClaimMemory(limit = 100_000): OwnClaimMemory {
  return new RecentMap<StoredClaim>(limit);
}

export interface OwnClaimMemoryOptions {
  /** Claims remembered at most, when no `memory` is given (default 100,000). */
  limit?: number;
  /** The memory to use: one kept across calls (an IpamCache's, ipam-cache.ts); default a fresh one. */
  memory?: OwnClaimMemory;
}

/**
 * A store that remembers the address claims this process wrote, with the version its write got,
 * and answers a read of such a claim from memory: a release then deletes its claim without reading
 * it first (one request fewer per DEL on a shared store).
 *
 * Safe because every use of a claim read ends in a compare-and-swap at the version read, and a
 * version this process's own write got is one observed while the claim named this pool and key —
 * what a release's read before its pool write must see (DESIGN.md, "Claims"). If anybody changed
 * the claim since, the delete (or write) at the remembered version fails, as it would after a
 * fresh read: a release leaves the claim alone, an allocation retries. A claim is forgotten on any
 * delete or failed write of it, so a retry always reads afresh. Affinity claims are left to
 * {@link withAffinityCache}; reads are never remembered.
 */
export function withOwnClaimMemory(store: IpamStore, options: OwnClaimMemoryOptions = {}): IpamStore {
  const known = options.memory ?? createOwnClaimMemory(options.limit);
  const remember = (ref: ClaimRef, claim: StoredClaim): void => {
    if (!isAffinityNetwork(ref.network)) known.set(claimId(ref), claim);
  };
  const overrides: Partial<IpamStore> = {
    readClaim: (ref, options) => {
      const mine = options?.fresh === true ? undefined : known.get(claimId(ref));
      return mine === undefined ? store.readClaim(ref, options) : Promise.resolve(mine);
    },
    async writeClaim(ref, claim, expected) {
      known.delete(claimId(ref));
      const version = await store.writeClaim(ref, claim, expected);
      remember(ref, { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      known.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
  };
  // several claims in one request where the store can: those it wrote cost nothing
  const recall = (ref: ClaimRef) => {
    const mine = known.get(claimId(ref));
    return mine === undefined ? undefined : { stored: mine };
  };
  overrides.readClaims = (refs, readOptions) =>
    readOptions?.fresh === true ? store.readClaims(refs, readOptions) : readClaimsThrough(store, refs, { recall });
  overrides.commit = async (writes) => {
    for (const w of writes) if (w.kind === "claim" || w.kind === "delete-claim") known.delete(claimId(w.ref));
    const versions = await store.commit(writes);
    writes.forEach((w, i) => {
      const version = versions[i];
      if (w.kind === "claim" && version !== undefined) remember(w.ref, { claim: w.claim, version });
    });
    return versions;
  };
  return delegatingStore(store, overrides);
}
