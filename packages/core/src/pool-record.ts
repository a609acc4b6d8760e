import { StoreCorruptError } from "./errors.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { Pool } from "./pool.js";
import type { Reservation } from "./reservation.js";
import type { Claim, PoolRef } from "./store.js";

/**
 * Plain JSON forms of pools and claims, for stores that keep them as documents (key-value stores).
 * Offsets are decimal strings (bigints); decoding validates everything and throws
 * StoreCorruptError naming the object — never a silently dropped entry.
 */
export interface ReservationRecord {
  offset: string;
  containerId: string;
  ifName: string;
  podRef?: string;
  podUid?: string;
  createdAt?: string;
  sticky?: number;
  releasedAt?: string;
  extra?: Record<string, unknown>;
}

export interface PoolRecord {
  cidr: string;
  network: string;
  lastOffset: string | null;
  reservations: ReservationRecord[];
}

/** One reservation as a record, fields always in the same order (so its JSON text is deterministic). */
export function reservationToRecord(r: Reservation): ReservationRecord {
  const out: ReservationRecord = { offset: r.offset.toString(), containerId: r.key.containerId, ifName: r.key.ifName };
  if (r.podRef !== undefined) out.podRef = r.podRef;
  if (r.podUid !== undefined) out.podUid = r.podUid;
  if (r.createdAt !== undefined) out.createdAt = r.createdAt;
  if (r.sticky !== undefined) out.sticky = r.sticky;
  if (r.releasedAt !== undefined) out.releasedAt = r.releasedAt;
  if (r.extra !== undefined) out.extra = { ...r.extra };
  return out;
}

export function poolToRecord(ref: PoolRef, pool: Pool): PoolRecord {
  return {
    cidr: pool.cidr.text,
    network: ref.network,
    lastOffset: pool.lastOffset === undefined ? null : pool.lastOffset.toString(),
    reservations: pool.reservations().map(reservationToRecord),
  };
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Validates a decoded JSON value and builds the Pool (PoolCorruptError for broken invariants). */
export function poolFromRecord(ref: PoolRef, value: unknown, object: string, component?: string): Pool {
  const fail = (reason: string) => new StoreCorruptError(object, reason, component === undefined ? {} : { component });
  if (!isObj(value)) throw fail("expected a JSON object");
  const { cidr: cidrText, network, lastOffset, reservations } = value;
  if (typeof cidrText !== "string") throw fail('"cidr" must be a string');
  let cidr: ReturnType<typeof parseCidr>;
  try {
    cidr = parseCidr(cidrText);
  } catch {
    throw fail(`"cidr" ${JSON.stringify(cidrText)} is not a CIDR`);
  }
  if (cidr.text !== cidrText || cidr.text !== ref.cidr) throw fail(`"cidr" ${JSON.stringify(cidrText)} does not match ${ref.cidr}`);
  if (network !== ref.network) throw fail(`"network" ${JSON.stringify(network)} does not match ${JSON.stringify(ref.network)}`);
  if (lastOffset !== null && (typeof lastOffset !== "string" || !DECIMAL.test(lastOffset)))
    throw fail('"lastOffset" must be a decimal string or null');
  if (!Array.isArray(reservations)) throw fail('"reservations" must be an array');
  const out: Reservation[] = reservations.map((row: unknown, i) => {
    const where = `reservation #${i}`;
    if (!isObj(row)) throw fail(`${where}: expected an object`);
    if (typeof row.offset !== "string" || !DECIMAL.test(row.offset)) throw fail(`${where}: "offset" must be a decimal string`);
    if (typeof row.containerId !== "string" || typeof row.ifName !== "string")
      throw fail(`${where}: "containerId" and "ifName" must be strings`);
    let key: Reservation["key"];
    try {
      key = attachmentKey({ containerId: row.containerId, ifName: row.ifName }, { allowLegacy: true });
    } catch (error) {
      throw fail(`${where}: ${(error as Error).message}`);
    }
    const r: { -readonly [K in keyof Reservation]: Reservation[K] } = { offset: BigInt(row.offset), key };
    for (const field of ["podRef", "podUid", "createdAt", "releasedAt"] as const) {
      const v = row[field];
      if (v === undefined) continue;
      if (typeof v !== "string") throw fail(`${where}: "${field}" must be a string`);
      r[field] = v;
    }
    if (row.sticky !== undefined) {
      if (!Number.isSafeInteger(row.sticky) || (row.sticky as number) < 0)
        throw fail(`${where}: "sticky" must be a whole number of seconds`);
      r.sticky = row.sticky as number;
    }
    if (row.extra !== undefined) {
      if (!isObj(row.extra)) throw fail(`${where}: "extra" must be an object`);
      r.extra = row.extra;
    }
    return r;
  });
  return Pool.fromReservations(cidr, out, { name: object, ...(lastOffset === null ? {} : { lastOffset: BigInt(lastOffset) }) });
}

export function claimToRecord(claim: Claim): Obj {
  const out: Obj = {
    pool: { network: claim.pool.network, cidr: claim.pool.cidr },
    key: { containerId: claim.key.containerId, ifName: claim.key.ifName },
  };
  if (claim.podRef !== undefined) out.podRef = claim.podRef;
  return out;
}

export function claimFromRecord(value: unknown, object: string, component?: string): Claim {
  const fail = (reason: string) => new StoreCorruptError(object, reason, component === undefined ? {} : { component });
  if (!isObj(value) || !isObj(value.pool) || !isObj(value.key)) throw fail("expected {pool, key}");
  const { network, cidr } = value.pool;
  const { containerId, ifName } = value.key;
  if (typeof network !== "string" || typeof cidr !== "string") throw fail("pool must be {network, cidr}");
  if (typeof containerId !== "string" || typeof ifName !== "string") throw fail("key must be {containerId, ifName}");
  if (value.podRef !== undefined && typeof value.podRef !== "string") throw fail('"podRef" must be a string');
  let key: Claim["key"];
  try {
    key = attachmentKey({ containerId, ifName }, { allowLegacy: true });
  } catch (error) {
    throw fail((error as Error).message);
  }
  return { pool: { network, cidr }, key, ...(typeof value.podRef === "string" ? { podRef: value.podRef } : {}) };
}
