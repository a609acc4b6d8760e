import { completeStore } from "./complete-store.js";
import { StoreConflictError } from "./errors.js";
import { parseCidr } from "./ip.js";
import { Pool } from "./pool.js";
import { sameReservation } from "./reservation.js";
import {
  type Claim,
  type ClaimRef,
  claimId,
  comparePoolRefs,
  type IpamStore,
  type PoolRef,
  poolId,
  type StoreBackend,
  type StoreCapabilities,
  type StoredClaim,
  type StoredPool,
  type StoreWrite,
  type Version,
} from "./store.js";

export const MEMORY_STORE_NAME = "storage-memory";

/** A pool ref as listed: a copy of the one written (with its node, for a node's slice pool). */
const refOf = (ref: PoolRef): PoolRef =>
  ref.node === undefined ? { network: ref.network, cidr: ref.cidr } : { network: ref.network, cidr: ref.cidr, node: ref.node };

interface Entry<T> {
  value: T;
  version: number;
  ref: unknown;
}

/** The records of a memory store: every write a compare-and-swap on a counter version. */
class MemoryTables {
  readonly pools = new Map<string, Entry<Pool>>();
  readonly claims = new Map<string, Entry<Claim>>();
  private clock = 0;

  matches<T>(map: Map<string, Entry<T>>, id: string, expected: Version | undefined): boolean {
    const current = map.get(id);
    return expected === undefined ? current === undefined : current !== undefined && String(current.version) === expected;
  }

  cas<T>(map: Map<string, Entry<T>>, id: string, ref: unknown, value: T | undefined, expected: Version | undefined): Version {
    if (!this.matches(map, id, expected)) throw new StoreConflictError(id, { component: MEMORY_STORE_NAME });
    this.clock += 1;
    if (value === undefined) map.delete(id);
    else map.set(id, { value, version: this.clock, ref });
    return String(this.clock);
  }

  /** The pool a step leaves behind, or undefined when its condition fails. */
  applyEntry(w: StoreWrite & { kind: "reserve" | "unreserve" }): Pool | undefined {
    const current = this.pools.get(poolId(w.ref))?.value ?? Pool.empty(parseCidr(w.ref.cidr), { name: poolId(w.ref) });
    const r = w.reservation;
    if (w.kind === "reserve") {
      if (current.atOffset(r.offset) !== undefined || current.forKey(r.key) !== undefined) return undefined;
      return current.with(r, { moveCursor: false }).withCursor(w.lastOffset);
    }
    const held = current.atOffset(r.offset);
    return held !== undefined && sameReservation(held, r) ? current.withoutAt(r.offset) : undefined;
  }

  commit(writes: readonly StoreWrite[], entryWrites: boolean): Version[] {
    for (const w of writes) {
      const ok =
        w.kind === "reserve" || w.kind === "unreserve"
          ? entryWrites && this.applyEntry(w) !== undefined
          : w.kind === "pool" || w.kind === "check-pool"
            ? this.matches(this.pools, poolId(w.ref), w.expected)
            : this.matches(this.claims, claimId(w.ref), w.expected);
      if (!ok)
        throw new StoreConflictError(w.kind.endsWith("claim") ? claimId(w.ref as ClaimRef) : poolId(w.ref as PoolRef), {
          component: MEMORY_STORE_NAME,
        });
    }
    return writes.map((w) => {
      if (w.kind === "reserve" || w.kind === "unreserve") {
        const id = poolId(w.ref);
        return this.cas(
          this.pools,
          id,
          refOf(w.ref),
          this.applyEntry(w) as Pool,
          this.pools.has(id) ? String(this.pools.get(id)?.version) : undefined,
        );
      }
      if (w.kind === "pool") return this.cas(this.pools, poolId(w.ref), refOf(w.ref), w.pool, w.expected);
      if (w.kind === "claim")
        return this.cas(this.claims, claimId(w.ref), { network: w.ref.network, address: w.ref.address }, w.claim, w.expected);
      if (w.kind === "delete-claim") {
        this.cas(this.claims, claimId(w.ref), undefined, undefined, w.expected);
        return "";
      }
      return w.expected ?? "";
    });
  }
}

/**
 * The in-memory reference store: one process only. Pools are immutable values, so they are stored
 * as they are, without copying. It can do everything the contract allows; its options say which
 * of it to advertise (the capabilities of the same names; default: nothing optional), so that
 * core's paths for stores with and without each ability run on it. Passes the same conformance
 * suite as every other store.
 */
export type MemoryStoreOptions = Partial<
  Pick<StoreCapabilities, "transactions" | "entryWrites" | "batchReads" | "bulkLists" | "nodePools">
>;

export function createMemoryStore(options: MemoryStoreOptions = {}): IpamStore {
  const capabilities: StoreCapabilities = {
    crossProcess: false,
    distributed: false,
    transactions: options.transactions === true || options.entryWrites === true,
    entryWrites: options.entryWrites === true,
    batchReads: options.batchReads === true,
    bulkLists: options.bulkLists === true,
    nodePools: options.nodePools === true,
  };
  const tables = new MemoryTables();
  const { pools, claims } = tables;
  const readClaim = (ref: ClaimRef): StoredClaim | undefined => {
    const entry = claims.get(claimId(ref));
    return entry === undefined ? undefined : { claim: entry.value, version: String(entry.version) };
  };
  const readPool = (ref: PoolRef): StoredPool | undefined => {
    const entry = pools.get(poolId(ref));
    return entry === undefined ? undefined : { pool: entry.value, version: String(entry.version) };
  };
  const poolRefs = () => [...pools.values()].map((e) => e.ref as PoolRef).sort(comparePoolRefs);
  const claimRefs = (networks: readonly string[]) =>
    networks.flatMap((network) =>
      [...claims.values()]
        .map((e) => e.ref as ClaimRef)
        .filter((r) => r.network === network)
        .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0)),
    );
  const backend: StoreBackend = {
    name: MEMORY_STORE_NAME,
    capabilities,
    readPool: async (ref) => readPool(ref),
    async writePool(ref, pool, expected) {
      return tables.cas(pools, poolId(ref), refOf(ref), pool, expected);
    },
    async listPools(listing) {
      const refs = poolRefs();
      return listing?.contents === true ? refs.map((ref) => ({ ref, stored: readPool(ref) as StoredPool })) : refs;
    },
    readClaims: async (refs) => refs.map(readClaim),
    async writeClaim(ref, claim, expected) {
      return tables.cas(claims, claimId(ref), { network: ref.network, address: ref.address }, claim, expected);
    },
    async deleteClaim(ref, expected) {
      tables.cas(claims, claimId(ref), undefined, undefined, expected);
    },
    async listClaims(networks, listing) {
      const refs = claimRefs(networks);
      return listing?.contents === true ? refs.map((ref) => ({ ref, stored: readClaim(ref) as StoredClaim })) : refs;
    },
    commit: async (writes) => tables.commit(writes, capabilities.entryWrites),
    async close() {},
  };
  return completeStore(backend);
}
