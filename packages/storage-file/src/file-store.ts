import { resolve } from "node:path";
import { completeStore, type IpamStore, type StoreBackend } from "@ipamkit/core";
import { deleteClaim, listClaims, readClaims, writeClaim } from "./claim-calls.js";
import { listPools, readPool, writePool } from "./pool-calls.js";
import { createFileContext, STORE_NAME } from "./store-context.js";

export { STORE_NAME } from "./store-context.js";

/** The default root directory, beside the CNI plugins' own state. */
export const DEFAULT_FILE_STORE_DIR = "/var/lib/cni/ipamkit";

export interface FileStoreOptions {
  /**
   * Root directory of the store; created with mode 0700 on the first write when missing.
   * Every process that shares IP pools on this node must use the same directory, on a local
   * filesystem that supports hard links (ext4, xfs, btrfs, tmpfs…; not a network filesystem).
   * Default `/var/lib/cni/ipamkit`.
   */
  dir?: string;
}

/**
 * The embedded single-node store: one directory tree on a local filesystem, safe for many OS
 * processes at once (several CNI invocations on a node) without any lock. Every pool and every
 * claim is a directory of immutable generation files; a write links a complete, fsynced file to
 * the next generation number, so a concurrent write loses with StoreConflictError and a reader
 * never sees a partial file. See DESIGN.md.
 *
 * The calls live in pool-calls.ts (pools) and claim-calls.ts (claims), over the state in
 * store-context.ts.
 */
export function createFileStore(options: FileStoreOptions = {}): IpamStore {
  const ctx = createFileContext(resolve(options.dir ?? DEFAULT_FILE_STORE_DIR));
  // no bulk lists, batched reads or transactions: core's adapter reads record by record
  return completeStore({
    name: STORE_NAME,
    capabilities: {
      crossProcess: true,
      distributed: false,
      transactions: false,
      entryWrites: false,
      batchReads: false,
      bulkLists: false,
      nodePools: false,
    },
    readPool: (ref) => readPool(ctx, ref),
    writePool: (ref, pool, expected) => writePool(ctx, ref, pool, expected),
    listPools: () => listPools(ctx),
    readClaims: (refs) => readClaims(ctx, refs),
    writeClaim: (ref, claim, expected) => writeClaim(ctx, ref, claim, expected),
    deleteClaim: (ref, expected) => deleteClaim(ctx, ref, expected),
    listClaims: (networks) => listClaims(ctx, networks),
    async close() {
      ctx.pools.clear();
      ctx.claims.clear();
    },
  } satisfies StoreBackend);
}
