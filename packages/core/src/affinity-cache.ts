import { type RecalledClaim, readClaimsThrough } from "./claims.js";
import { delegatingStore } from "./complete-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { type ClaimRef, claimId, type IpamStore, type StoredClaim } from "./store.js";

/** What a process remembers of block-affinity claims; one may serve several store instances of one backend. */
export interface AffinityMemory {
  readonly claimed: Map<string, StoredClaim>;
}

export function createAffinityMemory(): AffinityMemory {
  return { claimed: new Map() };
}

export interface AffinityCacheOptions {
  /**
   * The memory to use: share one between store instances of the same backend that may be in use
   * at once (a client replaced after its kubeconfig was rewritten, while calls on the old one
   * finish), so that each knows the claims the other has seen.
   */
  memory?: AffinityMemory;
}

/**
 * A store whose block-affinity claims, once seen, are remembered (for a long-lived process such as
 * the node-local agent). ipamkit never deletes an affinity claim, so a remembered one stays true;
 * and if an operator did delete one, safety would not suffer: every address is still reserved by
 * compare-and-swap in its block pool — affinity only spreads the writes (DESIGN.md). A block read
 * as unclaimed is never remembered: another writer (another node, or another process of this
 * node) may claim it at any time, and the blocks that may hold a node's keys are those before its
 * first unclaimed one, so that answer always comes from the store. Several claims asked at once
 * (`readClaims`) are read together, only those it does not remember. Every other call, and every other claim, goes straight to the store.
 */
export function withAffinityCache(store: IpamStore, options: AffinityCacheOptions = {}): IpamStore {
  const { claimed } = options.memory ?? createAffinityMemory();
  /** The answer from memory, if it may be given without a request: only a claim seen. */
  const recall = (ref: ClaimRef): RecalledClaim => {
    if (!isAffinityNetwork(ref.network)) return undefined;
    const hit = claimed.get(claimId(ref));
    return hit === undefined ? undefined : { stored: hit };
  };
  const learn = (ref: ClaimRef, read: StoredClaim | undefined): void => {
    if (isAffinityNetwork(ref.network) && read !== undefined) claimed.set(claimId(ref), read);
  };
  const overrides: Partial<IpamStore> = {
    async readClaim(ref, readOptions) {
      const known = readOptions?.fresh === true ? undefined : recall(ref);
      if (known !== undefined) return known.stored;
      const read = await store.readClaim(ref, readOptions);
      learn(ref, read);
      return read;
    },
    async writeClaim(ref, claim, expected) {
      const version = await store.writeClaim(ref, claim, expected);
      if (isAffinityNetwork(ref.network)) claimed.set(claimId(ref), { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      claimed.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
  };
  // several claims read in one request where the store can: those remembered cost nothing
  overrides.readClaims = (refs, readOptions) =>
    readClaimsThrough(store, refs, { recall: readOptions?.fresh === true ? () => undefined : recall, learn });
  return delegatingStore(store, overrides);
}
