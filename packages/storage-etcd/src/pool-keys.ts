import { type PoolRef, poolId, type ReservationRecord, StoreCorruptError } from "@ipamkit/core";
import type { IKeyValue } from "etcd3";
import { STORE_NAME } from "./errors.js";
import type { Layout } from "./layout.js";

/** A pool as found in etcd: the record to decode, its version, and each reservation's mod revision. */
export interface StoredEntries {
  record: { cidr: unknown; network: unknown; lastOffset: string | null; reservations: ReservationRecord[] };
  /** The meta key's mod revision: the pool's version. */
  version: string;
  revisions: Map<bigint, string>;
  /** Offsets whose address key holds an empty value: released (a tombstone, reused by the next reserve). */
  tombstones: Set<bigint>;
}

/** A decimal offset, as this store writes it (no sign, no leading zero). */
export const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * Reads the keys of one pool (one range read). Reports every inconsistency as StoreCorruptError
 * naming the key — entries without `meta`, an index that disagrees with its reservation, bad JSON —
 * and drops nothing.
 */
export function readPoolKeys(ref: PoolRef, keys: Layout, kvs: readonly IKeyValue[]): StoredEntries | undefined {
  if (kvs.length === 0) return undefined;
  const prefix = keys.pool(ref);
  const corrupt = (key: string, reason: string) => new StoreCorruptError(key, `pool ${poolId(ref)}: ${reason}`, { component: STORE_NAME });
  const json = (kv: IKeyValue, key: string): unknown => {
    try {
      return JSON.parse(kv.value.toString("utf8"));
    } catch {
      throw corrupt(key, "not valid JSON");
    }
  };
  let meta: { cidr: unknown; network: unknown } | undefined;
  let version = "";
  let lastOffset: string | null = null;
  const reservations: ReservationRecord[] = [];
  const revisions = new Map<bigint, string>();
  const tombstones = new Set<bigint>();
  const index = new Map<string, string>();
  for (const kv of kvs) {
    const key = kv.key.toString("utf8");
    const rest = key.slice(prefix.length);
    if (rest === "meta") {
      const value = json(kv, key);
      if (typeof value !== "object" || value === null) throw corrupt(key, "expected {cidr, network}");
      meta = value as { cidr: unknown; network: unknown };
      version = kv.mod_revision;
    } else if (rest === "cursor") {
      const text = kv.value.toString("utf8");
      if (text !== "" && !DECIMAL.test(text)) throw corrupt(key, "cursor is not a decimal offset");
      lastOffset = text === "" ? null : text;
    } else if (rest.startsWith("ip/")) {
      const offset = rest.slice(3);
      if (kv.value.length === 0 && DECIMAL.test(offset)) {
        tombstones.add(BigInt(offset));
        continue;
      }
      const value = json(kv, key) as ReservationRecord;
      if (!DECIMAL.test(offset) || typeof value !== "object" || value === null || value.offset !== offset)
        throw corrupt(key, "reservation does not match its key");
      reservations.push(value);
      revisions.set(BigInt(offset), kv.mod_revision);
    } else if (rest.startsWith("key/")) {
      let attachment: string;
      try {
        attachment = decodeURIComponent(rest.slice(4));
      } catch {
        throw corrupt(key, "index key is not a percent-encoded attachment key");
      }
      index.set(attachment, kv.value.toString("utf8"));
    } else {
      throw corrupt(key, "unexpected key in a pool");
    }
  }
  if (meta === undefined) {
    if (reservations.length === 0 && index.size === 0) return undefined;
    throw corrupt(`${prefix}meta`, "pool entries exist but the pool's meta key is missing");
  }
  for (const r of reservations) {
    const k = `${r.containerId}/${r.ifName}`;
    if (index.get(k) !== r.offset) throw corrupt(keys.key(ref, k), `index says ${String(index.get(k))}, reservation is at ${r.offset}`);
    index.delete(k);
  }
  for (const [k, offset] of index) throw corrupt(keys.key(ref, k), `index points at ${offset}, which holds no reservation of this key`);
  return { record: { cidr: meta.cidr, network: meta.network, lastOffset, reservations }, version, revisions, tombstones };
}
