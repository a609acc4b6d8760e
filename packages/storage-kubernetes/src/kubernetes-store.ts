import { completeStore, type IpamStore, type StoreBackend } from "@ipamkit/core";
import { createObjectApi } from "./api.js";
import { deleteClaim, listClaims, readClaim, writeClaim } from "./claim-calls.js";
import { STORE_NAME } from "./errors.js";
import { type KubernetesStoreOptions, resolveOptions } from "./options.js";
import { listPools, readPool, writePool } from "./pool-calls.js";
import { createStoreContext } from "./store-context.js";

/**
 * The Kubernetes store, on Whereabouts' own custom resources (see DESIGN.md). A pool is one
 * IPPool; its version is `metadata.resourceVersion`; every write is a PUT (or a create) guarded by
 * it, so a stale write is a 409 and changes nothing. Overlapping-range claims are
 * OverlappingRangeIPReservations, written by core's fenced claim protocol (no multi-object
 * transactions exist). No Lease, no leader election.
 *
 * The calls live in pool-calls.ts (IPPools) and claim-calls.ts (reservations), over the state
 * in store-context.ts.
 */
export function createKubernetesStore(options: KubernetesStoreOptions = {}): IpamStore {
  const resolved = resolveOptions(options);
  const ctx = createStoreContext(resolved, createObjectApi(resolved), options.onWarning);
  const store: StoreBackend = {
    name: STORE_NAME,
    // no multi-object transactions; one paged list reads every pool or reservation
    capabilities: {
      crossProcess: true,
      distributed: true,
      transactions: false,
      entryWrites: false,
      batchReads: false,
      bulkLists: true,
      nodePools: true,
    },
    readPool: (ref) => readPool(ctx, ref),
    writePool: (ref, pool, expected) => writePool(ctx, ref, pool, expected),
    listPools: (listing) => listPools(ctx, listing?.contents === true),
    readClaims: (refs) => Promise.all(refs.map((ref) => readClaim(ctx, ref))),
    writeClaim: (ref, claim, expected) => writeClaim(ctx, ref, claim, expected),
    deleteClaim: (ref, expected) => deleteClaim(ctx, ref, expected),
    listClaims: (networks, listing) => listClaims(ctx, networks, listing?.contents === true),
    async close() {
      ctx.api.close();
      ctx.seen.clear();
      ctx.decoded.clear();
    },
  };
  return completeStore(store);
}
