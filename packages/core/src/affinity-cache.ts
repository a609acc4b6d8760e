import { type RecalledClaim, readClaimsThrough } from "./claims.js";
import { delegatingStore } from "./delegating-store.js";
import { StoreConflictError } from "./errors.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { type ClaimRef, claimId, type IpamStore, type StoredClaim, type Version } from "./store.js";

/** What a process remembers of block-affinity claims; one may serve several store instances of one backend. */
export interface AffinityMemory {
  readonly claimed: Map<string, StoredClaim>;
  readonly unclaimed: Set<string>;
}

export function createAffinityMemory(): AffinityMemory {
  return { claimed: new Map(), unclaimed: new Set() };
}

export interface AffinityCacheOptions {
  /**
   * Whether this process is, for now, the only one that allocates for this node on the affinity
   * network (`<network>-node-blocks`, core's `affinityNetworkOf`) — the node-local agent when
   * every config of the network says `agent_required`. Asked at each affinity read; once false
   * for a network it should stay false. While true, a block read as unclaimed is also remembered,
   * and a node's steady ADD and DEL read no affinity claim (DESIGN.md, per-node blocks). Without
   * it (default) an unclaimed block is read afresh on every call.
   */
  soleWriter?: (affinityNetwork: string) => boolean;
  /**
   * The memory to use: share one between store instances of the same backend that may be in use
   * at once (a client replaced after its kubeconfig was rewritten, while calls on the old one
   * finish), so that neither remembers a block as unclaimed that the other has claimed.
   */
  memory?: AffinityMemory;
}

/**
 * A store whose block-affinity claims, once seen, are remembered (for a long-lived process such as
 * the node-local agent). ipamkit never deletes an affinity claim, so a remembered one stays true;
 * and if an operator did delete one, safety would not suffer: every address is still reserved by
 * compare-and-swap in its block pool — affinity only spreads the writes (DESIGN.md). With
 * `soleWriter`, blocks read as unclaimed are remembered too, and forgotten whenever this process
 * tries to claim one (so a block another node took costs one failed claim, then a fresh read);
 * a claim lost to another node forgets every block of that network remembered as unclaimed, since
 * other nodes are claiming there. Where the store reads several claims in one request
 * (`readClaims`), so does this wrapper, reading only those it does not remember.
 * A read with `fresh` goes to the store and updates the memory. With `soleWriter`, a block
 * presumed unclaimed (`presumeUnclaimed`: the next of the node's order after a block it has just
 * claimed) is remembered as unclaimed too, unless seen claimed. Every other call, and every other
 * claim, goes straight to the store.
 */
export function withAffinityCache(store: IpamStore, options: AffinityCacheOptions = {}): IpamStore {
  const { claimed, unclaimed } = options.memory ?? createAffinityMemory();
  const soleWriter = options.soleWriter ?? (() => false);
  /** The answer from memory, if it may be given without a request. */
  const recall = (ref: ClaimRef): RecalledClaim => {
    if (!isAffinityNetwork(ref.network)) return undefined;
    const id = claimId(ref);
    const hit = claimed.get(id);
    if (hit !== undefined) return { stored: hit };
    return soleWriter(ref.network) && unclaimed.has(id) ? { stored: undefined } : undefined;
  };
  const learn = (ref: ClaimRef, read: StoredClaim | undefined): void => {
    if (!isAffinityNetwork(ref.network)) return;
    const id = claimId(ref);
    if (read !== undefined) {
      unclaimed.delete(id);
      claimed.set(id, read);
    } else if (soleWriter(ref.network)) unclaimed.add(id);
    else unclaimed.delete(id);
  };
  /** Another node claims blocks of this network: what this process saw unclaimed there is read afresh. */
  const forgetUnclaimed = (affinityNetwork: string): void => {
    const prefix = claimId({ network: affinityNetwork, address: "" });
    for (const id of unclaimed) if (id.startsWith(prefix)) unclaimed.delete(id);
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
      if (!isAffinityNetwork(ref.network)) return store.writeClaim(ref, claim, expected);
      // taken by another node, or an outcome not known: read it afresh next time
      unclaimed.delete(claimId(ref));
      let version: Version;
      try {
        version = await store.writeClaim(ref, claim, expected);
      } catch (error) {
        if (error instanceof StoreConflictError) forgetUnclaimed(ref.network);
        throw error;
      }
      claimed.set(claimId(ref), { claim, version });
      return version;
    },
    async deleteClaim(ref, expected) {
      claimed.delete(claimId(ref));
      unclaimed.delete(claimId(ref));
      await store.deleteClaim(ref, expected);
    },
    presumeUnclaimed(ref) {
      // remembered as a block read unclaimed would be: only for a node's only writer, never over a claim seen
      if (isAffinityNetwork(ref.network) && soleWriter(ref.network) && !claimed.has(claimId(ref))) unclaimed.add(claimId(ref));
      store.presumeUnclaimed?.(ref);
    },
  };
  // several claims read in one request where the store can: those remembered cost nothing
  if (store.readClaims !== undefined) overrides.readClaims = (refs) => readClaimsThrough(store, refs, { recall, learn });
  return delegatingStore(store, overrides);
}
