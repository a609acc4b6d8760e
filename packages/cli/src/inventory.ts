import {
  affinityNetworkOf,
  blockLayout,
  blockRange,
  cidrContains,
  formatIp,
  type IpamStore,
  ipAt,
  isAffinityNetwork,
  type ObservedReservation,
  type PoolRef,
  parseCidr,
  parseRange,
  type Range,
  type StoredPool,
  scanClaimsOf,
} from "@ipamkit/core";
import type { StoreSpec } from "./store-spec.js";

/** One pool as read, with what the CLI shows of it. */
export interface PoolView {
  ref: PoolRef;
  stored?: StoredPool;
  /** Why it could not be read (corrupt data). */
  error?: Error;
  used: number;
  /** Addresses it can hand out: from the config's range when given, else the CIDR's default range. */
  capacity: bigint;
  /** A per-node block: the node whose affinity claim holds it, and the configured range it belongs to. */
  block?: { node: string; range?: string };
}

export interface Inventory {
  pools: PoolView[];
  /** Every reservation of the readable pools, in pool then offset order. */
  reservations: ObservedReservation[];
}

/** Progress of a long scan, for stderr. */
export type Progress = (message: string) => void;

type Read = { ref: PoolRef; stored?: StoredPool; error?: Error };

async function readPools(store: IpamStore, progress: Progress): Promise<Read[]> {
  if (store.capabilities.bulkLists) {
    progress("reading every pool (bulk)");
    const scanned = await store.listPools({ contents: true });
    return scanned.map((s) => ("error" in s ? { ref: s.ref, error: s.error } : { ref: s.ref, stored: s.stored }));
  }
  const refs = await store.listPools();
  const out: Read[] = [];
  for (let i = 0; i < refs.length; i += 16) {
    if (refs.length > 64) progress(`reading pools ${i + 1}-${Math.min(i + 16, refs.length)} of ${refs.length}`);
    const batch = refs.slice(i, i + 16);
    out.push(
      ...(await Promise.all(
        batch.map((ref) =>
          store.readPool(ref).then(
            (stored): Read => (stored === undefined ? { ref } : { ref, stored }),
            (error: unknown): Read => ({ ref, error: error instanceof Error ? error : new Error(String(error)) }),
          ),
        ),
      )),
    );
  }
  return out;
}

/** Pools by network, then by family and address (10.0.0.48/28 before 10.0.0.144/28), then prefix. */
function byAddress(a: Read, b: Read): number {
  if (a.ref.network !== b.ref.network) return a.ref.network < b.ref.network ? -1 : 1;
  const x = parseCidr(a.ref.cidr);
  const y = parseCidr(b.ref.cidr);
  if (x.family !== y.family) return x.family < y.family ? -1 : 1;
  if (x.network !== y.network) return x.network < y.network ? -1 : 1;
  return x.prefix - y.prefix;
}

/**
 * What a pool can hand out: its configured range's capacity (a block's share of it), else the
 * CIDR's own range — or, for a block (whose range is not known without a config), every address.
 */
function capacityOf(ref: PoolRef, spec: StoreSpec, block: boolean): { capacity: bigint; range?: Range } {
  const cidr = parseCidr(ref.cidr);
  for (const range of spec.ranges ?? []) {
    if (range.cidr.text === cidr.text) return { capacity: range.capacity, range };
    if (range.family !== cidr.family || range.cidr.prefix >= cidr.prefix || !cidrContains(range.cidr, ipAt(cidr, 0n))) continue;
    if (spec.nodeBlockSize === undefined) continue;
    const block = blockRange(blockLayout(range, spec.nodeBlockSize), (cidr.network - range.cidr.network) / cidr.size);
    return { capacity: block?.capacity ?? 0n, range };
  }
  if (block) return { capacity: cidr.size };
  try {
    return { capacity: parseRange({ range: ref.cidr }).capacity };
  } catch {
    return { capacity: cidr.size };
  }
}

/** Reads every pool (of `spec.network` when given), its reservations, and who holds each per-node block. */
export async function readInventory(store: IpamStore, spec: StoreSpec, progress: Progress): Promise<Inventory> {
  const reads = (await readPools(store, progress)).filter((r) => spec.network === undefined || r.ref.network === spec.network);
  const networks = [...new Set(reads.map((r) => r.ref.network))].filter((n) => !isAffinityNetwork(n));
  const affinity = await scanClaimsOf(
    store,
    networks.map((n) => affinityNetworkOf(n)),
  );
  const owner = new Map(affinity.map((c) => [`${c.ref.network}\n${c.ref.address}`, c.stored.claim.key.containerId]));
  const pools: PoolView[] = [];
  const reservations: ObservedReservation[] = [];
  for (const read of reads.sort(byAddress)) {
    const first = read.ref.cidr.slice(0, read.ref.cidr.indexOf("/"));
    const node = owner.get(`${affinityNetworkOf(read.ref.network)}\n${first}`);
    const { capacity, range } = capacityOf(read.ref, spec, node !== undefined);
    const view: PoolView = {
      ref: read.ref,
      used: read.stored?.pool.size ?? 0,
      capacity,
      ...(read.stored === undefined ? {} : { stored: read.stored }),
      ...(read.error === undefined ? {} : { error: read.error }),
      ...(node === undefined ? {} : { block: { node, ...(range === undefined ? {} : { range: range.cidr.text }) } }),
    };
    pools.push(view);
    const pool = read.stored?.pool;
    if (pool === undefined) continue;
    for (const reservation of pool.reservations()) {
      reservations.push({ pool: read.ref, address: formatIp(ipAt(pool.cidr, reservation.offset)), reservation });
    }
  }
  progress(`read ${pools.length} pools, ${reservations.length} reservations`);
  return { pools, reservations };
}
