import {
  type Claim,
  type ClaimRef,
  claimId,
  completeStore,
  type IpamStore,
  type Pool,
  type PoolRef,
  poolId,
  type StoreBackend,
  type StoredClaim,
  type StoredPool,
  type StoreWrite,
  type Version,
} from "@ipamkit/core";
import { STORE_NAME } from "./errors.js";
import { openConnection } from "./etcd-client.js";
import { layout } from "./layout.js";
import { listClaims, listPools, readClaims, scanClaims, scanPools, storedClaim } from "./listings.js";
import type { EtcdStoreOptions } from "./options.js";
import { PoolReads } from "./pool-reads.js";
import { Transactions } from "./transaction.js";

export const DEFAULT_PREFIX = "/ipamkit/";

/**
 * The etcd store. Every write is one etcd transaction guarded by mod revisions (or create
 * revision 0 for create-if-absent); no lock, no lease. A pool is a small `meta` key plus one key
 * per reservation and per attachment key (see layout.ts). It offers the atomic `commit` with
 * entry-level steps: an allocation claims its address and key with create-if-absent, in the same
 * transaction as its overlapping-range claim, so concurrent allocators in one pool conflict only
 * when they pick the same address. Whole-pool writes stay strict compare-and-swap on `meta`.
 */
export function createEtcdStore(options: EtcdStoreOptions = {}): IpamStore {
  const etcd = openConnection(options);
  const keys = layout(options.prefix ?? DEFAULT_PREFIX);
  const reads = new PoolReads(etcd, keys);
  const txns = new Transactions(etcd, keys, reads);
  const store: StoreBackend = {
    name: STORE_NAME,
    capabilities: {
      crossProcess: true,
      distributed: true,
      transactions: true,
      entryWrites: true,
      batchReads: true,
      bulkLists: true,
      nodePools: false,
    },
    readPool: (ref: PoolRef): Promise<StoredPool | undefined> => reads.read(ref),
    async writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
      const [version] = await txns.transact([{ kind: "pool", ref, pool, expected }], `write ${poolId(ref)}`);
      return version as Version;
    },
    listPools: (listing) => (listing?.contents === true ? scanPools(etcd, keys, reads) : listPools(etcd, keys)),
    async readClaims(refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
      const [only] = refs;
      if (refs.length !== 1 || only === undefined) return readClaims(etcd, keys, refs);
      const key = keys.claim(only);
      const response = await etcd.call(`read claim ${claimId(only)}`, () => etcd.client.get(key).exec());
      return [storedClaim(key, response.kvs[0])];
    },
    async writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
      const [version] = await txns.transact([{ kind: "claim", ref, claim, expected }], `write claim ${claimId(ref)}`);
      return version as Version;
    },
    async deleteClaim(ref: ClaimRef, expected: Version): Promise<void> {
      await txns.transact([{ kind: "delete-claim", ref, expected }], `delete claim ${claimId(ref)}`);
    },
    listClaims: (networks, listing) => (listing?.contents === true ? scanClaims(etcd, keys, networks) : listClaims(etcd, keys, networks)),
    commit: (writes: readonly StoreWrite[]): Promise<Version[]> => txns.transact(writes, "commit"),
    async close(): Promise<void> {
      if (etcd.owned) etcd.client.close();
    },
  };
  return completeStore(store);
}
