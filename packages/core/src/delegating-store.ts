import type { IpamStore } from "./store.js";

/**
 * A store that passes every call to `store` except those in `overrides`: the one base of the
 * store wrappers (withAffinityCache, withOwnClaimMemory, withPoolRecall, the agent's lending). The
 * optional calls (`commit`, `recallPool`, `readClaims`, `scanClaims`, `scanPools`) are offered
 * exactly when `store` offers them, unless an override sets them, so no wrapper hides a capability of the store it wraps — except that a wrapper overriding
 * `readClaim` alone offers no `readClaims` and no `scanClaims`, and one overriding `readPool` alone
 * no `scanPools`: reads then go through its own `readClaim` or `readPool`, never around it.
 */
export function delegatingStore(store: IpamStore, overrides: Partial<IpamStore> = {}): IpamStore {
  const base: IpamStore = {
    name: store.name,
    capabilities: store.capabilities,
    readPool: (ref) => store.readPool(ref),
    writePool: (ref, pool, expected) => store.writePool(ref, pool, expected),
    listPools: () => store.listPools(),
    readClaim: (ref, options) => store.readClaim(ref, options),
    writeClaim: (ref, claim, expected) => store.writeClaim(ref, claim, expected),
    deleteClaim: (ref, expected) => store.deleteClaim(ref, expected),
    listClaims: (network) => store.listClaims(network),
    close: () => store.close(),
  };
  const { commit, recallPool } = store;
  if (commit !== undefined) base.commit = (writes) => commit.call(store, writes);
  if (recallPool !== undefined) base.recallPool = (ref) => recallPool.call(store, ref);
  const { readClaims, scanClaims, scanPools } = store;
  if (scanPools !== undefined && overrides.readPool === undefined) base.scanPools = () => scanPools.call(store);
  if (readClaims !== undefined && overrides.readClaim === undefined) base.readClaims = (refs) => readClaims.call(store, refs);
  if (scanClaims !== undefined && overrides.readClaim === undefined) base.scanClaims = (networks) => scanClaims.call(store, networks);
  return { ...base, ...overrides };
}
