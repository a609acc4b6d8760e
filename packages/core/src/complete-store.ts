import { StoreRejectedError } from "./errors.js";
import {
  type ClaimRef,
  type IpamStore,
  type ListOptions,
  type PoolRef,
  poolId,
  type ScannedClaim,
  type ScannedPool,
  type StoreBackend,
  type StoredClaim,
  type StoreWrite,
  type Version,
} from "./store.js";

const completed = new WeakSet<object>();

/** A ref of a node's slice pool, on a store without `capabilities.nodePools`: refused, never merged into the range's pool. */
function refuseNodePool(backend: { name: string }, ref: PoolRef): void {
  if (ref.node === undefined) return;
  throw new StoreRejectedError(poolId(ref), `${backend.name} keeps no node-slice pools (node_slice_size needs the Kubernetes store)`, {
    component: backend.name,
  });
}

/** The node-slice refs a store without `nodePools` must not be given: each pool step's, and each claim's pool. */
function refuseNodePools(backend: { name: string }, writes: readonly StoreWrite[]): void {
  for (const w of writes) {
    if (w.kind === "claim") refuseNodePool(backend, w.claim.pool);
    else if (w.kind !== "delete-claim") refuseNodePool(backend, w.ref);
  }
}

/** Every pool listed, each read with `readPool` (a refused read in its place with its error). */
async function readEachPool(store: Pick<StoreBackend, "readPool">, refs: readonly PoolRef[]): Promise<ScannedPool[]> {
  const out: ScannedPool[] = [];
  for (const ref of refs) {
    try {
      const stored = await store.readPool(ref);
      if (stored !== undefined) out.push({ ref, stored });
    } catch (error) {
      out.push({ ref, error: error instanceof Error ? error : new Error(String(error)) });
    }
  }
  return out;
}

/** Every claim listed, read together with `readClaims`; those gone since the listing left out. */
async function readEachClaim(store: Pick<StoreBackend, "readClaims">, refs: readonly ClaimRef[]): Promise<ScannedClaim[]> {
  if (refs.length === 0) return [];
  const read = await store.readClaims(refs);
  return refs.flatMap((ref, i) => {
    const stored = read[i];
    return stored === undefined ? [] : [{ ref, stored }];
  });
}

/**
 * The one adapter between the storage contract and its callers: gives `backend` the full
 * {@link IpamStore} shape, filling in what its capabilities say it lacks — listings with contents
 * read record by record where the store has no bulk list, `readClaim` as a batch of one, and a
 * `commit` that refuses where the store has no transactions. A store already complete is
 * returned as it is.
 */
export function completeStore(backend: StoreBackend | IpamStore): IpamStore {
  if (completed.has(backend)) return backend as IpamStore;
  const { capabilities } = backend;
  // only refs of node-slice pools are refused; a store with nodePools takes every call as it is
  const guard = capabilities.nodePools ? () => undefined : (ref: PoolRef) => refuseNodePool(backend, ref);
  const readClaims = (refs: readonly ClaimRef[], options?: { fresh?: boolean }): Promise<(StoredClaim | undefined)[]> =>
    refs.length === 0 ? Promise.resolve([]) : backend.readClaims(refs, options);
  const store: IpamStore = {
    name: backend.name,
    capabilities,
    readPool: async (ref) => {
      guard(ref);
      return backend.readPool(ref);
    },
    writePool: async (ref, pool, expected) => {
      guard(ref);
      return backend.writePool(ref, pool, expected);
    },
    listPools: (async (options?: ListOptions) => {
      if (options?.contents !== true) return backend.listPools();
      if (capabilities.bulkLists) return backend.listPools(options);
      return readEachPool(backend, (await backend.listPools()) as PoolRef[]);
    }) as IpamStore["listPools"],
    readClaims,
    readClaim: async (ref, options) => (await readClaims([ref], options))[0],
    writeClaim: async (ref, claim, expected) => {
      guard(claim.pool);
      return backend.writeClaim(ref, claim, expected);
    },
    deleteClaim: (ref, expected) => backend.deleteClaim(ref, expected),
    listClaims: (async (networks: string | readonly string[], options?: ListOptions) => {
      const asked = [...new Set(typeof networks === "string" ? [networks] : networks)];
      if (asked.length === 0) return [];
      if (options?.contents !== true) return backend.listClaims(asked);
      if (capabilities.bulkLists) return backend.listClaims(asked, options);
      return readEachClaim(backend, (await backend.listClaims(asked)) as ClaimRef[]);
    }) as IpamStore["listClaims"],
    commit: (writes: readonly StoreWrite[]): Promise<Version[]> => {
      const commit = backend.commit;
      if (!capabilities.transactions || commit === undefined)
        return Promise.reject(new StoreRejectedError("a transaction", `${backend.name} has no transactions`, { component: backend.name }));
      if (!capabilities.nodePools) {
        try {
          refuseNodePools(backend, writes);
        } catch (error) {
          return Promise.reject(error);
        }
      }
      return commit.call(backend, writes);
    },
    close: () => backend.close(),
  };
  completed.add(store);
  return store;
}

/**
 * A complete store that passes every call to `store` except those in `overrides` (a decorator's
 * base: core's caches, counting, lending). The derived calls follow the overrides: a decorator
 * overriding `readClaim` alone gets `readClaims` through it (one each), one overriding
 * `readClaims` gets `readClaim` as a batch of one, one overriding `readPool` gets listings with
 * contents read through it — so no read goes around a decorator.
 */
export function delegatingStore(store: IpamStore, overrides: Partial<IpamStore>): IpamStore {
  const readPool = overrides.readPool ?? ((ref: PoolRef) => store.readPool(ref));
  const capabilities = overrides.capabilities ?? store.capabilities;
  // listings with contents pass through only where no override of a read (or of bulkLists) is around them
  const bulkPools = capabilities.bulkLists && overrides.readPool === undefined;
  const bulkClaims = capabilities.bulkLists && overrides.readClaim === undefined && overrides.readClaims === undefined;
  const ownClaim = overrides.readClaim;
  const readClaims =
    overrides.readClaims ??
    (ownClaim === undefined
      ? (refs: readonly ClaimRef[], options?: { fresh?: boolean }) => store.readClaims(refs, options)
      : (refs: readonly ClaimRef[], options?: { fresh?: boolean }) => Promise.all(refs.map((ref) => ownClaim(ref, options))));
  const decorated: IpamStore = {
    name: store.name,
    capabilities,
    readPool,
    writePool: (ref, pool, expected) => store.writePool(ref, pool, expected),
    listPools: (async (options?: ListOptions) => {
      if (options?.contents !== true) return store.listPools();
      if (bulkPools) return store.listPools({ contents: true });
      return readEachPool({ readPool }, await store.listPools());
    }) as IpamStore["listPools"],
    readClaims,
    readClaim: ownClaim ?? (async (ref, options) => (await readClaims([ref], options))[0]),
    writeClaim: (ref, claim, expected) => store.writeClaim(ref, claim, expected),
    deleteClaim: (ref, expected) => store.deleteClaim(ref, expected),
    listClaims: (async (networks: string | readonly string[], options?: ListOptions) => {
      const asked = typeof networks === "string" ? [networks] : networks;
      if (options?.contents !== true) return store.listClaims(asked);
      if (bulkClaims) return store.listClaims(asked, { contents: true });
      return readEachClaim({ readClaims }, await store.listClaims(asked));
    }) as IpamStore["listClaims"],
    commit: (writes) => store.commit(writes),
    close: () => store.close(),
    ...overrides,
  };
  // the overrides' own listings, if any, win; the derived reads above stay consistent with them
  completed.add(decorated);
  return decorated;
}
