import {
  type Claim,
  type ClaimRef,
  claimFromRecord,
  claimId,
  claimToRecord,
  comparePoolRefs,
  formatKey,
  InvalidRequestError,
  type IpamStore,
  type Pool,
  type PoolRef,
  poolFromRecord,
  poolId,
  type Reservation,
  reservationToRecord,
  type ScannedClaim,
  type ScannedPool,
  StoreConflictError,
  StoreCorruptError,
  type StoredClaim,
  type StoredPool,
  StoreRejectedError,
  StoreUnavailableError,
  type StoreWrite,
  sameKey,
  type Version,
} from "@ipamkit/core";
import { noop } from "cockatiel";
import { type DeleteBuilder, Etcd3, type IKeyValue, type IOptions, type PutBuilder } from "etcd3";
import { mapEtcdError, STORE_NAME } from "./errors.js";
import { layout } from "./layout.js";
import { checkEndpoint, type EtcdStoreOptions, normalizeEndpoint, resolveTls } from "./options.js";
import { DECIMAL, readPoolKeys, type StoredEntries } from "./pool-keys.js";
import { DEFAULT_RANGE_PAGE_SIZE, readPrefixPaged } from "./range-pages.js";

export const DEFAULT_PREFIX = "/ipamkit/";

type Compare = { key: string; column: "Create" | "Mod" | "Value"; value: string | number };

/** Range reads per `readClaims` transaction: below etcd's default `--max-txn-ops` (128). */
const READS_PER_TXN = 100;

/** A claim key's value as a stored claim; undefined when the key is absent. */
function storedClaim(key: string, kv: IKeyValue | undefined): StoredClaim | undefined {
  if (kv === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(kv.value.toString("utf8"));
  } catch {
    throw new StoreCorruptError(key, "not valid JSON", { component: STORE_NAME });
  }
  return { claim: claimFromRecord(value, key, STORE_NAME), version: kv.mod_revision };
}

interface CachedPool {
  pool: Pool;
  version: Version;
  /** The store revision the cached pool reflects. */
  revision: bigint;
  tombstones: Set<bigint>;
}

/**
 * The etcd store. Every write is one etcd transaction guarded by mod revisions (or create
 * revision 0 for create-if-absent); no lock, no lease. A pool is a small `meta` key plus one key
 * per reservation and per attachment key (see layout.ts). It offers the atomic `commit` with
 * entry-level steps: an allocation claims its address and key with create-if-absent, in the same
 * transaction as its overlapping-range claim, so concurrent allocators in one pool conflict only
 * when they pick the same address. Whole-pool writes stay strict compare-and-swap on `meta`.
 */
export function createEtcdStore(options: EtcdStoreOptions = {}): IpamStore {
  const tls = resolveTls(options.tls);
  for (const endpoint of options.endpoints ?? []) checkEndpoint(endpoint);
  const endpoints = (options.endpoints ?? ["127.0.0.1:2379"]).map((e) => normalizeEndpoint(e, tls !== undefined));
  const requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
  const keys = layout(options.prefix ?? DEFAULT_PREFIX);
  const pageSize = options.rangePageSize ?? DEFAULT_RANGE_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1)
    throw new InvalidRequestError(`rangePageSize ${pageSize}: must be a positive integer`);
  const owned = options.client === undefined;
  const credentials: IOptions["credentials"] | undefined =
    tls === undefined
      ? undefined
      : {
          rootCertificate: tls.ca ?? Buffer.alloc(0),
          ...(tls.key ? { privateKey: tls.key } : {}),
          ...(tls.cert ? { certChain: tls.cert } : {}),
        };
  const client =
    options.client ??
    new Etcd3({
      hosts: endpoints,
      dialTimeout: options.dialTimeoutMs ?? 3_000,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
      // core's withConflictRetry is the only retry loop: no hidden retries or circuit breakers here.
      faultHandling: { host: () => noop, global: noop },
      // each store its own connection: grpc-js otherwise shares one per target across the process
      // (an agent hosting several nodes, a library user with two stores), coupling their fates
      grpcOptions: { "grpc.use_local_subchannel_pool": 1 },
      ...(credentials === undefined ? {} : { credentials }),
      ...(options.username === undefined ? {} : { auth: { username: options.username, password: options.password ?? "" } }),
    });
  /** Mod revisions of reservations read from etcd, so an "unreserve" can compare exactly what it saw. */
  const seen = new WeakMap<Reservation, string>();
  /** Pools read by this instance, refreshed with only the keys changed since (see refresh). */
  const cache = new Map<string, CachedPool>();

  /**
   * Runs one etcd call under the request deadline, mapping every failure in one place. A write
   * (`write`) that fails unavailable — UNAVAILABLE after a dropped connection, a deadline — may
   * have been applied: its error says so (`outcomeUnknown`), and core reads again to find out.
   */
  async function call<T>(operation: string, fn: () => Promise<T>, write = false): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreUnavailableError(`etcd ${operation} timed out after ${requestTimeoutMs} ms on ${endpoints.join(",")}`, {
              component: STORE_NAME,
              outcomeUnknown: write,
            }),
          ),
        requestTimeoutMs + 250,
      );
    });
    try {
      return await Promise.race([fn(), deadline]);
    } catch (error) {
      throw mapEtcdError(error, operation, endpoints, { write });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Every key under a prefix, paged (see range-pages.ts), each request under the deadline. */
  const readPrefix = (operation: string, prefix: string, only: { minModRevision?: string; keysOnly?: boolean } = {}) =>
    readPrefixPaged({ client, prefix, pageSize, ...only, run: (request) => call(operation, request) });
  const keysUnder = async (operation: string, prefix: string) =>
    (await readPrefix(operation, prefix, { keysOnly: true })).kvs.map((kv) => kv.key.toString("utf8"));

  /** How corruption reports name a pool: its key prefix and its id. */
  const poolObject = (ref: PoolRef) => `${keys.pool(ref)} (pool ${poolId(ref)})`;

  function toPool(ref: PoolRef, entries: StoredEntries): Pool {
    const pool = poolFromRecord(ref, entries.record, poolObject(ref), STORE_NAME);
    for (const r of pool) {
      const revision = entries.revisions.get(r.offset);
      if (revision !== undefined) seen.set(r, revision);
    }
    return pool;
  }

  /** A full read of the pool's keys (validating the index too); fills the cache. */
  async function readFull(ref: PoolRef): Promise<StoredPool | undefined> {
    const response = await readPrefix(`read ${poolId(ref)}`, keys.pool(ref));
    const stored = fromKeys(ref, response.kvs, BigInt(response.revision));
    if (stored === undefined) cache.delete(poolId(ref));
    return stored;
  }

  /** A pool read from all of its keys at `revision` (a full read's or a scan's); fills the cache. */
  function fromKeys(ref: PoolRef, kvs: readonly IKeyValue[], revision: bigint): StoredPool | undefined {
    const entries = readPoolKeys(ref, keys, kvs);
    if (entries === undefined) return undefined;
    const pool = toPool(ref, entries);
    cache.set(poolId(ref), { pool, version: entries.version, revision, tombstones: entries.tombstones });
    return { pool, version: entries.version };
  }

  /**
   * Brings a cached pool up to date with one small read: only the pool's keys modified since the
   * cached revision. Releases write an empty value (a tombstone) rather than deleting, so they show
   * up here too. Anything unexpected falls back to a full read.
   */
  async function refresh(ref: PoolRef, cached: CachedPool): Promise<StoredPool | undefined> {
    const since = (cached.revision + 1n).toString();
    const response = await readPrefix(`read ${poolId(ref)}`, keys.pool(ref), { minModRevision: since });
    const current = cache.get(poolId(ref));
    const revision = BigInt(response.revision);
    if (current !== undefined && current.revision >= revision) return { pool: current.pool, version: current.version };
    try {
      const next = applyChanges(ref, cached, response.kvs, revision);
      cache.set(poolId(ref), next);
      return { pool: next.pool, version: next.version };
    } catch {
      return readFull(ref);
    }
  }

  function applyChanges(ref: PoolRef, cached: CachedPool, kvs: readonly IKeyValue[], revision: bigint): CachedPool {
    const prefix = keys.pool(ref);
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
      } else if (rest.startsWith("ip/")) {
        // only the exact form this store writes is folded in; anything else is validated by a full read
        const text = rest.slice(3);
        if (!DECIMAL.test(text)) throw new Error(`unexpected key ${rest}`);
        const offset = BigInt(text);
        const old = pool.atOffset(offset);
        if (old !== undefined) pool = pool.without(old.key);
        if (kv.value.length === 0) {
          tombstones.add(offset);
          continue;
        }
        tombstones.delete(offset);
        const value: unknown = JSON.parse(kv.value.toString("utf8"));
        if (typeof value !== "object" || value === null || (value as { offset?: unknown }).offset !== text)
          throw new Error(`reservation at ${rest} does not match its key`);
        const record = { cidr: ref.cidr, network: ref.network, lastOffset: null, reservations: [value] };
        const [r] = poolFromRecord(ref, record, kv.key.toString("utf8"), STORE_NAME).reservations();
        if (r === undefined) throw new Error("unreadable reservation");
        seen.set(r, kv.mod_revision);
        pool = pool.with(r, { moveCursor: false });
      }
    }
    // an index entry written since must point at its own reservation (as a full read checks)
    for (const [encoded, offset] of indexed) {
      const r = DECIMAL.test(offset) ? pool.atOffset(BigInt(offset)) : undefined;
      if (r === undefined || keys.key(ref, `${r.key.containerId}/${r.key.ifName}`) !== `${prefix}key/${encoded}`)
        throw new Error(`index key/${encoded} does not match the reservation at ${offset}`);
    }
    return { pool, version, revision, tombstones };
  }

  const metaValue = (ref: PoolRef) => JSON.stringify({ cidr: ref.cidr, network: ref.network });
  const ipValue = (r: Reservation) => JSON.stringify(reservationToRecord(r));

  /**
   * One key/<containerId/ifName> row per key: a container holds at most one entry without ifname
   * here (Whereabouts' IPPools may hold several). Refused, rather than written as a pool whose
   * index cannot be read back.
   */
  function refuseSeveralLegacy(ref: PoolRef, pool: Pool): void {
    const legacy = new Set<string>();
    for (const r of pool) {
      if (r.key.ifName !== "") continue;
      if (legacy.has(r.key.containerId))
        throw new StoreRejectedError(poolId(ref), `container ${r.key.containerId} holds two entries without ifname; this store keeps one`, {
          component: STORE_NAME,
        });
      legacy.add(r.key.containerId);
    }
  }

  /** Compares and operations of one step ("pool" steps need the current entries, read before). */
  async function plan(w: StoreWrite, compares: Compare[], ops: (PutBuilder | DeleteBuilder)[], metas: Set<string>): Promise<void> {
    // etcd refuses a key twice in one transaction: several entry steps of one pool bump its meta once
    const putMeta = (ref: PoolRef) => {
      const key = keys.meta(ref);
      if (metas.has(key)) return;
      metas.add(key);
      ops.push(client.put(key).value(metaValue(ref)));
    };
    const versionCompare = (key: string, expected: Version | undefined): Compare =>
      expected === undefined ? { key, column: "Create", value: 0 } : { key, column: "Mod", value: expected };
    switch (w.kind) {
      case "claim":
        compares.push(versionCompare(keys.claim(w.ref), w.expected));
        ops.push(client.put(keys.claim(w.ref)).value(JSON.stringify(claimToRecord(w.claim))));
        return;
      case "delete-claim":
        compares.push(versionCompare(keys.claim(w.ref), w.expected));
        ops.push(client.delete().key(keys.claim(w.ref)));
        return;
      case "check-pool":
        compares.push(versionCompare(keys.meta(w.ref), w.expected));
        return;
      case "reserve": {
        const r = w.reservation;
        const released = cache.get(poolId(w.ref))?.tombstones.has(r.offset) === true;
        compares.push(
          released
            ? { key: keys.ip(w.ref, r.offset), column: "Value", value: "" }
            : { key: keys.ip(w.ref, r.offset), column: "Create", value: 0 },
          { key: keys.key(w.ref, formatKey(r.key)), column: "Create", value: 0 },
        );
        ops.push(
          client.put(keys.ip(w.ref, r.offset)).value(ipValue(r)),
          client.put(keys.key(w.ref, formatKey(r.key))).value(r.offset.toString()),
        );
        putMeta(w.ref);
        if (w.lastOffset !== undefined) ops.push(client.put(keys.cursor(w.ref)).value(w.lastOffset.toString()));
        return;
      }
      case "unreserve": {
        const r = w.reservation;
        const revision = seen.get(r);
        compares.push(
          revision === undefined
            ? { key: keys.ip(w.ref, r.offset), column: "Value", value: ipValue(r) }
            : { key: keys.ip(w.ref, r.offset), column: "Mod", value: revision },
        );
        ops.push(client.put(keys.ip(w.ref, r.offset)).value(""), client.delete().key(keys.key(w.ref, formatKey(r.key))));
        putMeta(w.ref);
        return;
      }
      case "pool": {
        refuseSeveralLegacy(w.ref, w.pool);
        // Strict: the whole pool must be as read (meta revision); then write only the difference.
        const current = await readFull(w.ref);
        if (current?.version !== w.expected) throw new StoreConflictError(poolId(w.ref), { component: STORE_NAME });
        compares.push(versionCompare(keys.meta(w.ref), w.expected));
        const before = new Map((current?.pool.reservations() ?? []).map((r) => [r.offset, r]));
        const after = new Map(w.pool.reservations().map((r) => [r.offset, r]));
        // One final operation per etcd key (etcd rejects a key twice in one transaction): a value to
        // put, or null to delete. Removals first, so an attachment that moves address is put, not deleted.
        const final = new Map<string, string | null>();
        for (const old of before.values()) {
          const next = after.get(old.offset);
          if (next !== undefined && ipValue(next) === ipValue(old)) continue;
          if (next === undefined) final.set(keys.ip(w.ref, old.offset), "");
          final.set(keys.key(w.ref, formatKey(old.key)), null);
        }
        for (const r of after.values()) {
          const old = before.get(r.offset);
          if (old !== undefined && ipValue(old) === ipValue(r)) continue;
          final.set(keys.ip(w.ref, r.offset), ipValue(r));
          final.set(keys.key(w.ref, formatKey(r.key)), r.offset.toString());
        }
        for (const [key, value] of final) ops.push(value === null ? client.delete().key(key) : client.put(key).value(value));
        putMeta(w.ref);
        ops.push(client.put(keys.cursor(w.ref)).value(w.pool.lastOffset === undefined ? "" : w.pool.lastOffset.toString()));
        return;
      }
    }
  }

  /**
   * Folds this instance's own committed entry step into its cached pool, so the cache (and so
   * recallPool, and the next reserve's tombstone compare) knows its own writes without reading
   * them back. The cached revision and version stay those of the last read: the next refresh still
   * fetches everything since, this write included, and folds it in again idempotently; a
   * whole-pool compare at the old version fails until then. What the cache cannot fold exactly
   * (a "pool" step; a cache that already holds the reserved offset or key, or lacks the released
   * reservation: it is stale) drops the pool for a full read.
   */
  function foldOwnStep(w: StoreWrite): void {
    if (w.kind === "pool") cache.delete(poolId(w.ref));
    if (w.kind !== "reserve" && w.kind !== "unreserve") return;
    const id = poolId(w.ref);
    const cached = cache.get(id);
    const pool = cached === undefined ? undefined : foldEntry(cached.pool, w);
    if (cached === undefined || pool === undefined) {
      cache.delete(id);
      return;
    }
    const tombstones = new Set(cached.tombstones);
    if (w.kind === "reserve") tombstones.delete(w.reservation.offset);
    else tombstones.add(w.reservation.offset);
    // The version stays the one last read: the commit rewrote the meta key, so a compare at it
    // fails until a read. The commit's revision would claim the folded pool is current, but it
    // lacks whatever others wrote between the last read and this commit.
    cache.set(id, { pool, version: cached.version, revision: cached.revision, tombstones });
  }

  /** The cached pool after a committed reserve or unreserve, or undefined when the cache is stale for it. */
  function foldEntry(pool: Pool, w: Extract<StoreWrite, { kind: "reserve" | "unreserve" }>): Pool | undefined {
    const r = w.reservation;
    const held = pool.atOffset(r.offset);
    if (w.kind === "unreserve") return held !== undefined && sameKey(held.key, r.key) ? pool.without(r.key) : undefined;
    if (held !== undefined || pool.forKey(r.key) !== undefined) return undefined;
    const added = pool.with(r, { moveCursor: false });
    return w.lastOffset === undefined ? added : added.withCursor(w.lastOffset);
  }

  /** One transaction for all steps; every compare must hold. Returns each step's new version. */
  async function transact(steps: readonly StoreWrite[], operation: string): Promise<Version[]> {
    const compares: Compare[] = [];
    const ops: (PutBuilder | DeleteBuilder)[] = [];
    const metas = new Set<string>();
    for (const w of steps) await plan(w, compares, ops, metas);
    // Every step compares at least one key, so no compare means nothing to do.
    const [first, ...rest] = compares;
    if (first === undefined) return [];
    const txn = client.if(first.key, first.column, "==", first.value);
    for (const c of rest) txn.and(c.key, c.column, "==", c.value);
    const result = await call(operation, () => txn.then(...ops).commit(), true);
    if (!result.succeeded) {
      const object = steps.map((w) => (w.kind.endsWith("claim") ? claimId(w.ref as ClaimRef) : poolId(w.ref as PoolRef))).join(" + ");
      throw new StoreConflictError(object, { component: STORE_NAME });
    }
    const revision = result.header.revision;
    for (const w of steps) foldOwnStep(w);
    return steps.map((w) => (w.kind === "check-pool" ? (w.expected ?? "") : w.kind === "delete-claim" ? "" : revision));
  }

  const store = {
    name: STORE_NAME,
    capabilities: { crossProcess: true, distributed: true, entryWrites: true },
    async readPool(ref: PoolRef): Promise<StoredPool | undefined> {
      const cached = cache.get(poolId(ref));
      return cached === undefined ? readFull(ref) : refresh(ref, cached);
    },
    /** The pool as this instance last read or wrote it, without a request (it may be stale: core validates by compare-and-swap). */
    recallPool(ref: PoolRef): StoredPool | undefined {
      const cached = cache.get(poolId(ref));
      return cached === undefined ? undefined : { pool: cached.pool, version: cached.version };
    },
    async writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
      const [version] = await transact([{ kind: "pool", ref, pool, expected }], `write ${poolId(ref)}`);
      return version as Version;
    },
    async listPools(): Promise<PoolRef[]> {
      const found = await keysUnder("list pools", keys.poolsPrefix);
      // every pool that has keys, not only those with a meta key: one whose meta was lost is listed
      // too, so that reading it reports the damage (a reconciler would otherwise never see it)
      const metas = new Set<string>();
      for (const k of found) {
        const [network, cidr, entry] = k.slice(keys.poolsPrefix.length).split("/");
        if (network !== undefined && cidr !== undefined && entry !== undefined) metas.add(`${keys.poolsPrefix}${network}/${cidr}/meta`);
      }
      return [...metas].flatMap((k) => keys.parsePool(k) ?? []).sort(comparePoolRefs);
    },
    /** Every pool in one paged range read of every pool's keys (at one revision), each read as readPool's full read reads it. */
    async scanPools(): Promise<ScannedPool[]> {
      const response = await readPrefix("scan pools", keys.poolsPrefix);
      const revision = BigInt(response.revision);
      const groups = new Map<string, IKeyValue[]>();
      for (const kv of response.kvs) {
        const [network, cidr, entry] = kv.key.toString("utf8").slice(keys.poolsPrefix.length).split("/");
        if (network === undefined || cidr === undefined || entry === undefined) continue;
        const group = `${keys.poolsPrefix}${network}/${cidr}/`;
        const kvs = groups.get(group);
        if (kvs === undefined) groups.set(group, [kv]);
        else kvs.push(kv);
      }
      const found = [...groups].flatMap(([group, kvs]) => {
        const ref = keys.parsePool(`${group}meta`);
        return ref === undefined ? [] : [{ ref, group, kvs }];
      });
      const out: ScannedPool[] = [];
      for (const { ref, group, kvs } of found.sort((a, b) => comparePoolRefs(a.ref, b.ref))) {
        try {
          // keys not where readPool reads this pool: read it as readPool does (no pool written so)
          const stored = keys.pool(ref) === group ? fromKeys(ref, kvs, revision) : await readFull(ref);
          if (stored !== undefined) out.push({ ref, stored });
        } catch (error) {
          out.push({ ref, error: error instanceof Error ? error : new Error(String(error)) });
        }
      }
      return out;
    },
    async readClaim(ref: ClaimRef): Promise<StoredClaim | undefined> {
      const key = keys.claim(ref);
      const response = await call(`read claim ${claimId(ref)}`, () => client.get(key).exec());
      return storedClaim(key, response.kvs[0]);
    },
    /** Up to READS_PER_TXN claims per request: one transaction of range reads, no compares. */
    async readClaims(refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
      const out: (StoredClaim | undefined)[] = [];
      for (let i = 0; i < refs.length; i += READS_PER_TXN) {
        const names = refs.slice(i, i + READS_PER_TXN).map((r) => keys.claim(r));
        const success = names.map((name) => ({ request_range: { key: Buffer.from(name) } }));
        const result = await call(`read ${names.length} claims`, () => client.kv.txn({ success }));
        out.push(...names.map((name, n) => storedClaim(name, result.responses[n]?.response_range.kvs[0])));
      }
      return out;
    },
    async writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
      const [version] = await transact([{ kind: "claim", ref, claim, expected }], `write claim ${claimId(ref)}`);
      return version as Version;
    },
    async deleteClaim(ref: ClaimRef, expected: Version): Promise<void> {
      await transact([{ kind: "delete-claim", ref, expected }], `delete claim ${claimId(ref)}`);
    },
    /** Each network's claims in one paged range read; a claim key not where readClaim reads it is left out, as readClaim would miss it. */
    async scanClaims(networks: readonly string[]): Promise<ScannedClaim[]> {
      const out: ScannedClaim[] = [];
      for (const network of new Set(networks)) {
        const response = await readPrefix(`scan claims of network ${network}`, keys.claimsPrefix(network));
        const found = response.kvs.flatMap((kv) => {
          const key = kv.key.toString("utf8");
          const ref = keys.parseClaim(key);
          return ref === undefined || ref.network !== network || keys.claim(ref) !== key ? [] : [{ ref, key, kv }];
        });
        found.sort((a, b) => (a.ref.address < b.ref.address ? -1 : a.ref.address > b.ref.address ? 1 : 0));
        for (const { ref, key, kv } of found) {
          const stored = storedClaim(key, kv);
          if (stored !== undefined) out.push({ ref, stored });
        }
      }
      return out;
    },
    async listClaims(network: string): Promise<ClaimRef[]> {
      const found = await keysUnder("list claims", keys.claimsPrefix(network));
      return found
        .flatMap((k) => keys.parseClaim(k) ?? [])
        .filter((r) => r.network === network)
        .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    },
    async commit(writes: readonly StoreWrite[]): Promise<Version[]> {
      return transact(writes, "commit");
    },
    async close(): Promise<void> {
      if (owned) client.close();
    },
  } satisfies IpamStore;
  return store;
}
