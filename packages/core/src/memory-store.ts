import { StoreConflictError } from "./errors.js";
import type { Pool } from "./pool.js";
import {
  type Claim,
  type ClaimRef,
  claimId,
  comparePoolRefs,
  type IpamStore,
  type PoolRef,
  poolId,
  type StoredClaim,
  type StoredPool,
  type Version,
} from "./store.js";

export const MEMORY_STORE_NAME = "storage-memory";

interface Entry<T> {
  value: T;
  version: number;
  ref: unknown;
}

/**
 * The in-memory reference store: one process only. Pools are immutable values, so they are stored
 * as they are, without copying. Passes the same conformance suite as every other store.
 */
export function createMemoryStore(): IpamStore {
  const pools = new Map<string, Entry<Pool>>();
  const claims = new Map<string, Entry<Claim>>();
  let clock = 0;

  function cas<T>(map: Map<string, Entry<T>>, id: string, ref: unknown, value: T | undefined, expected: Version | undefined): Version {
    const current = map.get(id);
    const matches = expected === undefined ? current === undefined : current !== undefined && String(current.version) === expected;
    if (!matches) throw new StoreConflictError(id, { component: MEMORY_STORE_NAME });
    clock += 1;
    if (value === undefined) map.delete(id);
    else map.set(id, { value, version: clock, ref });
    return String(clock);
  }

  return {
    name: MEMORY_STORE_NAME,
    capabilities: { crossProcess: false, distributed: false },
    async readPool(ref: PoolRef): Promise<StoredPool | undefined> {
      const entry = pools.get(poolId(ref));
      return entry === undefined ? undefined : { pool: entry.value, version: String(entry.version) };
    },
    async writePool(ref, pool, expected) {
      return cas(pools, poolId(ref), { network: ref.network, cidr: ref.cidr }, pool, expected);
    },
    async listPools() {
      return [...pools.values()].map((e) => e.ref as PoolRef).sort(comparePoolRefs);
    },
    async readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
      const entry = claims.get(claimId(ref));
      return entry === undefined ? undefined : { claim: entry.value, version: String(entry.version) };
    },
    async writeClaim(ref, claim, expected) {
      return cas(claims, claimId(ref), { network: ref.network, address: ref.address }, claim, expected);
    },
    async deleteClaim(ref, expected) {
      cas(claims, claimId(ref), undefined, undefined, expected);
    },
    async listClaims(network) {
      return [...claims.values()]
        .map((e) => e.ref as ClaimRef)
        .filter((r) => r.network === network)
        .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    },
    async close() {},
  } satisfies IpamStore;
}
