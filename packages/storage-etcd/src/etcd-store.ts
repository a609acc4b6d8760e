import {
  type Claim,
  type ClaimRef,
  claimId,
  type IpamStore,
  type Pool,
  type PoolRef,
  poolId,
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
  const store = {
    name: STORE_NAME,
    capabilities: { crossProcess: true, distributed: true, entryWrites: true },
    readPool: (ref: PoolRef): Promise<StoredPool | undefined> => reads.read(ref),
    /** The pool as this instance last read or wrote it, without a request (it may be stale: core validates by compare-and-swap). */
    recallPool: (ref: PoolRef): StoredPool | undefined => reads.recall(ref),
    async writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
      const [version] = await txns.transact([{ kind: "pool", ref, pool, expected }], `write ${poolId(ref)}`);
      return version as Version;
    },
    listPools: () => listPools(etcd, keys),
    scanPools: () => scanPools(etcd, keys, reads),
    async readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
      const key = keys.claim(ref);
      const response = await etcd.call(`read claim ${claimId(ref)}`, () => etcd.client.get(key).exec());
      return storedClaim(key, response.kvs[0]);
    },
    readClaims: (refs: readonly ClaimRef[]) => readClaims(etcd, keys, refs),
    async writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
      const [version] = await txns.transact([{ kind: "claim", ref, claim, expected }], `write claim ${claimId(ref)}`);
      return version as Version;
    },
    async deleteClaim(ref: ClaimRef, expected: Version): Promise<void> {
      await txns.transact([{ kind: "delete-claim", ref, expected }], `delete claim ${claimId(ref)}`);
    },
    scanClaims: (networks: readonly string[]) => scanClaims(etcd, keys, networks),
    listClaims: (network: string) => listClaims(etcd, keys, network),
    commit: (writes: readonly StoreWrite[]): Promise<Version[]> => txns.transact(writes, "commit"),
    async close(): Promise<void> {
      if (etcd.owned) etcd.client.close();
    },
  } satisfies IpamStore;
  return store;
}
