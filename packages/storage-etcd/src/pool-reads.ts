import {
  foldEntry,
  type Pool,
  type PoolRef,
  poolFromRecord,
  poolId,
  type Reservation,
  type StoredPool,
  type StoreWrite,
  type Version,
} from "@ipamkit/core";
import type { IKeyValue } from "etcd3";
import { STORE_NAME } from "./errors.js";
import type { EtcdConnection } from "./etcd-client.js";
import type { Layout } from "./layout.js";
import { DECIMAL, readPoolKeys, type StoredEntries } from "./pool-keys.js";

interface CachedPool {
  pool: Pool;
  version: Version;
  /** The store revision the cached pool reflects. */
  revision: bigint;
  tombstones: Set<bigint>;
}

/** The `meta` key's value of a pool. */
export const metaValue = (ref: PoolRef) => JSON.stringify({ cidr: ref.cidr, network: ref.network });

/**
 * How this store instance reads pools: a full read of a pool's keys the first time, then only the
 * keys changed since (a pool's cache). Also what the transactions need to know of what was read:
 * each reservation's mod revision (`seen`, so an "unreserve" compares exactly what it saw) and
 * each pool's released offsets (`tombstones`, so a "reserve" compares the right column).
 */
export class PoolReads {
  /** Mod revisions of reservations read from etcd. */
  readonly seen = new WeakMap<Reservation, string>();
  /** Pools read by this instance, refreshed with only the keys changed since (see refresh). */
  private readonly cache = new Map<string, CachedPool>();

  constructor(
    private readonly etcd: EtcdConnection,
    private readonly keys: Layout,
  ) {}

  /** The pool, read in full the first time and refreshed after. */
  read(ref: PoolRef): Promise<StoredPool | undefined> {
    const cached = this.cache.get(poolId(ref));
    return cached === undefined ? this.readFull(ref) : this.refresh(ref, cached);
  }

  /** Whether `offset` of the pool was released (an empty value) as this instance last saw it. */
  released(ref: PoolRef, offset: bigint): boolean {
    return this.cache.get(poolId(ref))?.tombstones.has(offset) === true;
  }

  /** A full read of the pool's keys (validating the index too); fills the cache. */
  async readFull(ref: PoolRef): Promise<StoredPool | undefined> {
    const response = await this.etcd.readPrefix(`read ${poolId(ref)}`, this.keys.pool(ref));
    const stored = this.fromKeys(ref, response.kvs, BigInt(response.revision));
    if (stored === undefined) this.cache.delete(poolId(ref));
    return stored;
  }

  /** A pool read from all of its keys at `revision` (a full read's or a scan's); fills the cache. */
  fromKeys(ref: PoolRef, kvs: readonly IKeyValue[], revision: bigint): StoredPool | undefined {
    const entries = readPoolKeys(ref, this.keys, kvs);
    if (entries === undefined) return undefined;
    const pool = this.toPool(ref, entries);
    this.cache.set(poolId(ref), { pool, version: entries.version, revision, tombstones: entries.tombstones });
    return { pool, version: entries.version };
  }

  /**
   * Folds this instance's own committed entry step into its cached pool, so the cache (and the
   * next reserve's tombstone compare) knows its own writes without reading them back. The cached
   * revision and version stay those of the last read: the next refresh still fetches everything
   * since, this write included, and folds it in again idempotently; a whole-pool compare at the
   * old version fails until then. What the cache cannot fold exactly (a "pool" step; a cache that
   * already holds the reserved offset or key, or lacks the released reservation: it is stale)
   * drops the pool for a full read.
   */
  foldOwnStep(w: StoreWrite): void {
    if (w.kind === "pool") this.cache.delete(poolId(w.ref));
    if (w.kind !== "reserve" && w.kind !== "unreserve") return;
    const id = poolId(w.ref);
    const cached = this.cache.get(id);
    const pool = cached === undefined ? undefined : foldEntry(cached.pool, w);
    if (cached === undefined || pool === undefined) {
      this.cache.delete(id);
      return;
    }
    const tombstones = new Set(cached.tombstones);
    if (w.kind === "reserve") tombstones.delete(w.reservation.offset);
    else tombstones.add(w.reservation.offset);
    this.cache.set(id, { pool, version: cached.version, revision: cached.revision, tombstones });
  }

  private toPool(ref: PoolRef, entries: StoredEntries): Pool {
    const pool = poolFromRecord(ref, entries.record, this.poolObject(ref), STORE_NAME);
    for (const r of pool) {
      const revision = entries.revisions.get(r.offset);
      if (revision !== undefined) this.seen.set(r, revision);
    }
    return pool;
  }

  /** How corruption reports name a pool: its key prefix and its id. */
  private poolObject(ref: PoolRef): string {
    return `${this.keys.pool(ref)} (pool ${poolId(ref)})`;
  }

  /**
   * Brings a cached pool up to date with one small read: only the pool's keys modified since the
   * cached revision. Releases write an empty value (a tombstone) rather than deleting, so they show
   * up here too. Anything unexpected falls back to a full read.
   */
  private async refresh(ref: PoolRef, cached: CachedPool): Promise<StoredPool | undefined> {
    const since = (cached.revision + 1n).toString();
    const response = await this.etcd.readPrefix(`read ${poolId(ref)}`, this.keys.pool(ref), { minModRevision: since });
    const current = this.cache.get(poolId(ref));
    const revision = BigInt(response.revision);
    if (current !== undefined && current.revision >= revision) return { pool: current.pool, version: current.version };
    try {
      const next = this.applyChanges(ref, cached, response.kvs, revision);
      this.cache.set(poolId(ref), next);
      return { pool: next.pool, version: next.version };
    } catch {
      return this.readFull(ref);
    }
  }

  private applyChanges(ref: PoolRef, cached: CachedPool, kvs: readonly IKeyValue[], revision: bigint): CachedPool {
    const prefix = this.keys.pool(ref);
    let pool = cached.pool;
    let version = cached.version;
    const tombstones = new Set(cached.tombstones);
    const indexed: [string, string][] = [];
    for (const kv of kvs) {
      const rest = kv.key.toString("utf8").slice(prefix.length);
      if (rest === "meta") {
        if (kv.value.toString("utf8") !== metaValue(ref)) throw new Error("unexpected meta value");
        version = kv.mod_revision;
      } else if (rest.startsWith("key/")) indexed.push([rest.slice(4), kv.value.toString("utf8")]);
      else if (rest === "cursor") {
        const text = kv.value.toString("utf8");
        pool = pool.withCursor(text === "" ? undefined : BigInt(text));
      } else if (rest.startsWith("ip/")) pool = this.applyAddress(ref, pool, rest.slice(3), kv, tombstones);
    }
    // an index entry written since must point at its own reservation (as a full read checks)
    for (const [encoded, offset] of indexed) {
      const r = DECIMAL.test(offset) ? pool.atOffset(BigInt(offset)) : undefined;
      if (r === undefined || this.keys.key(ref, `${r.key.containerId}/${r.key.ifName}`) !== `${prefix}key/${encoded}`)
        throw new Error(`index key/${encoded} does not match the reservation at ${offset}`);
    }
    return { pool, version, revision, tombstones };
  }

  /** One changed `ip/<offset>` key folded in; only the exact form this store writes (anything else: a full read). */
  private applyAddress(ref: PoolRef, before: Pool, text: string, kv: IKeyValue, tombstones: Set<bigint>): Pool {
    if (!DECIMAL.test(text)) throw new Error(`unexpected key ip/${text}`);
    const offset = BigInt(text);
    const old = before.atOffset(offset);
    const pool = old === undefined ? before : before.without(old.key);
    if (kv.value.length === 0) {
      tombstones.add(offset);
      return pool;
    }
    tombstones.delete(offset);
    const value: unknown = JSON.parse(kv.value.toString("utf8"));
    if (typeof value !== "object" || value === null || (value as { offset?: unknown }).offset !== text)
      throw new Error(`reservation at ip/${text} does not match its key`);
    const record = { cidr: ref.cidr, network: ref.network, lastOffset: null, reservations: [value] };
    const [r] = poolFromRecord(ref, record, kv.key.toString("utf8"), STORE_NAME).reservations();
    if (r === undefined) throw new Error("unreadable reservation");
    this.seen.set(r, kv.mod_revision);
    return pool.with(r, { moveCursor: false });
  }
}
