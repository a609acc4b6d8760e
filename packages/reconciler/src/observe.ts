import { formatIp, type IpamStore, ipAt, type ObservedReservation, type PoolRef, poolId } from "@ipamkit/core";

export interface Observation {
  pools: number;
  reservations: ObservedReservation[];
  /** Pools that could not be read (e.g. corrupt data): reported, never written. */
  unreadable: { pool: PoolRef; error: Error }[];
}

/** Reads every pool once (stable order) and lists its reservations with their addresses. */
export async function observePools(store: IpamStore, podRefs?: ReadonlySet<string>): Promise<Observation> {
  const refs = await store.listPools();
  const observation: Observation = { pools: refs.length, reservations: [], unreadable: [] };
  for (const ref of refs) {
    try {
      const stored = await store.readPool(ref);
      if (stored === undefined) continue;
      for (const reservation of stored.pool.reservations()) {
        if (podRefs !== undefined && !podRefs.has(reservation.podRef ?? "")) continue;
        observation.reservations.push({ pool: ref, address: formatIp(ipAt(stored.pool.cidr, reservation.offset)), reservation });
      }
    } catch (error) {
      observation.unreadable.push({ pool: ref, error: error instanceof Error ? error : new Error(`${poolId(ref)}: ${String(error)}`) });
    }
  }
  return observation;
}
