import { delegatingStore } from "./delegating-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { claimId, type IpamStore, type StoredClaim } from "./store.js";

/**
 * A store whose block-affinity claims, once seen, are remembered (for a long-lived process such as
 * the node-local agent). ipamkit never deletes an affinity claim, so a remembered one stays true;
 * and if an operator did delete one, safety would not suffer: every address is still reserved by
 * compare-and-swap in its block pool — affinity only spreads the writes (DESIGN.md). Every other
 * call, and every other claim, goes straight to the store.
 */
export function withAffinityCache(store: IpamStore): IpamStore {
  const known = new Map<string, StoredClaim>();
  return delegatingStore(store, {
    async readClaim(ref) {
      if (!isAffinityNetwork(ref.network)) return store.readClaim(ref);
      const hit = known.get(claimId(ref));
      if (hit !== undefined) return hit;
      const read = await store.readClaim(ref);
      if (read !== undefined) known.set(claimId(ref), read);
      return read;
    },
    async writeClaim(ref, claim, expected) {
      const version = await store.writeClaim(ref, claim, expected);
      if (isAffinityNetwork(ref.network)) known.set(claimId(ref), { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      known.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
  });
}
