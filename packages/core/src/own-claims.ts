import { delegatingStore } from "./delegating-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import type { ClaimRef, IpamStore, StoredClaim, StoreWrite, Version } from "./store.js";

export interface OwnClaimMemoryOptions {
  /** Claims remembered at most; the oldest are forgotten first (default 100,000). */
  limit?: number;
}

/**
 * A store that remembers the address claims this process wrote, with the version its write got,
 * and answers a read of such a claim from memory: a release then deletes its claim without reading
 * it first (one request fewer per DEL on Kubernetes and etcd).
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
  const limit = options.limit ?? 100_000;
  const known = new Map<string, StoredClaim>();
  const id = (ref: ClaimRef) => `${ref.network}\u0000${ref.address}`;
  const remember = (ref: ClaimRef, claim: StoredClaim): void => {
    if (isAffinityNetwork(ref.network)) return;
    known.delete(id(ref));
    known.set(id(ref), claim);
    if (known.size > limit) known.delete(known.keys().next().value as string);
  };
  const claimSteps = (writes: readonly StoreWrite[]) =>
    writes.flatMap((w, i) => (w.kind === "claim" || w.kind === "delete-claim" ? [{ write: w, i }] : []));

  const overrides: Partial<IpamStore> = {
    readClaim: (ref) => Promise.resolve(known.get(id(ref)) ?? store.readClaim(ref)),
    async writeClaim(ref, claim, expected) {
      known.delete(id(ref));
      const version = await store.writeClaim(ref, claim, expected);
      remember(ref, { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      known.delete(id(ref));
      await store.deleteClaim(ref, expected);
    },
  };
  const commit = store.commit;
  if (commit !== undefined) {
    overrides.commit = async (writes) => {
      const steps = claimSteps(writes);
      for (const { write } of steps) known.delete(id(write.ref));
      const versions: Version[] = await commit.call(store, writes);
      for (const { write, i } of steps) {
        const version = versions[i];
        if (write.kind === "claim" && version !== undefined) remember(write.ref, { claim: write.claim, version });
      }
      return versions;
    };
  }
  return delegatingStore(store, overrides);
}
