import { formatIp, type IpamStore, ipAt, type ObservedReservation, type PoolRef, poolId, type StoredPool } from "@ipamkit/core";
import { mapLimited } from "./map-limited.js";

export interface Observation {
  pools: number;
  /** Every pool listed, in order (readable or not). */
  refs: PoolRef[];
  reservations: ObservedReservation[];
  /** Pools that could not be read (e.g. corrupt data): reported, never written. */
  unreadable: { pool: PoolRef; error: Error }[];
  /** Each pool as read, by poolId: handed to the pool's release (handed-reads.ts). */
  stored: Map<string, StoredPool>;
}

export interface ObserveOptions {
  /** Only the reservations of these pods (`namespace/name`). */
  podRefs?: ReadonlySet<string>;
  /** Pools read at most this many at once (default 1). */
  concurrency?: number;
}

type PoolRead = { stored: StoredPool | undefined } | { error: Error };

/**
 * Every pool and its read: in one bulk read where the store lists in bulk (one paged list or
 * range instead of a request per pool), else listed and read `concurrency` at a time.
 */
async function readEveryPool(store: IpamStore, concurrency: number): Promise<{ refs: PoolRef[]; reads: PoolRead[] }> {
  if (store.capabilities.bulkLists) {
    const scanned = await store.listPools({ contents: true });
    return {
      refs: scanned.map((x) => x.ref),
      reads: scanned.map((x): PoolRead => ("error" in x ? { error: x.error } : { stored: x.stored })),
    };
  }
  const refs = await store.listPools();
  const reads = await mapLimited(refs, concurrency, (ref) =>
    store.readPool(ref).then(
      (stored): PoolRead => ({ stored }),
      (error: unknown): PoolRead => ({ error: error instanceof Error ? error : new Error(`${poolId(ref)}: ${String(error)}`) }),
    ),
  );
  return { refs, reads };
}

/**
 * Reads every pool once and lists its reservations with their addresses, in the pools' listed
 * order whatever order the reads finish in. With per-node blocks a pool is a block: thousands of
 * small reads, so they are made in bulk where the store can, else `concurrency` at a time.
 */
export async function observePools(store: IpamStore, options: ObserveOptions = {}): Promise<Observation> {
  const { podRefs } = options;
  const { refs, reads } = await readEveryPool(store, options.concurrency ?? 1);
  const observation: Observation = { pools: refs.length, refs, reservations: [], unreadable: [], stored: new Map() };
  refs.forEach((ref, i) => {
    const read = reads[i] as PoolRead;
    if ("error" in read) {
      observation.unreadable.push({ pool: ref, error: read.error });
      return;
    }
    if (read.stored === undefined) return;
    observation.stored.set(poolId(ref), read.stored);
    const { pool } = read.stored;
    for (const reservation of pool.reservations()) {
      if (podRefs !== undefined && !podRefs.has(reservation.podRef ?? "")) continue;
      observation.reservations.push({ pool: ref, address: formatIp(ipAt(pool.cidr, reservation.offset)), reservation });
    }
  });
  return observation;
}
