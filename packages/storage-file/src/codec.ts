import {
  type AttachmentKey,
  attachmentKey,
  type Cidr,
  type Claim,
  claimToRecord,
  isIpamError,
  type Pool,
  type PoolRef,
  parseCidr,
  type Reservation,
  reservationToRecord,
} from "@ipamkit/core";

/**
 * The body fields of one generation file (see DESIGN.md, "File formats"). The generation layer
 * (generation-format.ts) puts its own header fields (`commit`, `ancestry`) first and wraps them in braces.
 *
 * Pool:  "cidr","network","lastOffset": "<decimal>"|null,"reservations":[{"offset":"<decimal>","containerId","ifName",...}]
 * Claim: "pool":{"network","cidr"},"key":{"containerId","ifName"},"podRef"?
 */

/** A decoding failure; the store turns it into StoreCorruptError naming the file. */
export class DecodeError extends Error {}

export interface PoolData {
  readonly cidr: Cidr;
  readonly network: string;
  readonly lastOffset: bigint | undefined;
  readonly reservations: Reservation[];
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

export type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(obj: Json, field: string, where: string): string {
  const v = obj[field];
  if (typeof v !== "string") throw new DecodeError(`${where}: "${field}" must be a string`);
  return v;
}

function optStr(obj: Json, field: string, where: string): string | undefined {
  const v = obj[field];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new DecodeError(`${where}: "${field}" must be a string when present`);
  return v;
}

function decimal(value: unknown, where: string): bigint {
  if (typeof value !== "string" || !DECIMAL.test(value)) {
    throw new DecodeError(`${where}: expected a decimal string, got ${JSON.stringify(value)}`);
  }
  return BigInt(value);
}

function key(containerId: string, ifName: string, where: string): AttachmentKey {
  try {
    return attachmentKey({ containerId, ifName }, { allowLegacy: true });
  } catch (error) {
    throw new DecodeError(`${where}: ${isIpamError(error) ? error.message : String(error)}`);
  }
}

// ---------------------------------------------------------------------------------------------- pools

/** Reservations are immutable and shared between successive pools: encode each one once. */
const rowCache = new WeakMap<Reservation, string>();

function reservationJson(r: Reservation): string {
  const cached = rowCache.get(r);
  if (cached !== undefined) return cached;
  const text = JSON.stringify(reservationToRecord(r));
  rowCache.set(r, text);
  return text;
}

/** The pool's fields, one reservation per line so a pool file stays readable and greppable. */
export function encodePoolFields(ref: PoolRef, pool: Pool): string {
  const head =
    `"cidr":${JSON.stringify(pool.cidr.text)},"network":${JSON.stringify(ref.network)},` +
    `"lastOffset":${pool.lastOffset === undefined ? "null" : JSON.stringify(pool.lastOffset.toString())},"reservations":[`;
  const rows = pool.reservations().map(reservationJson);
  return rows.length === 0 ? `${head}]` : `${head}\n${rows.join(",\n")}\n]`;
}

export function decodePool(ref: PoolRef, json: Json, text?: string): PoolData {
  const cidrText = str(json, "cidr", "pool");
  let cidr: Cidr;
  try {
    cidr = parseCidr(cidrText);
  } catch (error) {
    throw new DecodeError(`pool: bad "cidr" ${JSON.stringify(cidrText)} (${error instanceof Error ? error.message : String(error)})`);
  }
  if (cidr.text !== cidrText) throw new DecodeError(`pool: "cidr" ${JSON.stringify(cidrText)} is not in canonical form`);
  const network = str(json, "network", "pool");
  if (network !== ref.network) {
    throw new DecodeError(
      `pool: "network" is ${JSON.stringify(network)} but the file is stored under network ${JSON.stringify(ref.network)}`,
    );
  }
  const lastOffset = json.lastOffset === null ? undefined : decimal(json.lastOffset, 'pool: "lastOffset"');
  const rows = json.reservations;
  if (!Array.isArray(rows)) throw new DecodeError('pool: "reservations" must be an array');
  const reservations: Reservation[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    const where = `reservation #${i}`;
    if (!isObject(row)) throw new DecodeError(`${where}: expected an object`);
    const r: { -readonly [K in keyof Reservation]: Reservation[K] } = {
      offset: decimal(row.offset, `${where}: "offset"`),
      key: key(str(row, "containerId", where), str(row, "ifName", where), where),
    };
    const podRef = optStr(row, "podRef", where);
    if (podRef !== undefined) r.podRef = podRef;
    const podUid = optStr(row, "podUid", where);
    if (podUid !== undefined) r.podUid = podUid;
    const createdAt = optStr(row, "createdAt", where);
    if (createdAt !== undefined) r.createdAt = createdAt;
    if (row.sticky !== undefined) {
      if (typeof row.sticky !== "number" || !Number.isSafeInteger(row.sticky) || row.sticky < 0)
        throw new DecodeError(`${where}: "sticky" must be a whole number of seconds when present`);
      r.sticky = row.sticky;
    }
    const releasedAt = optStr(row, "releasedAt", where);
    if (releasedAt !== undefined) r.releasedAt = releasedAt;
    if (row.extra !== undefined) {
      if (!isObject(row.extra)) throw new DecodeError(`${where}: "extra" must be an object when present`);
      r.extra = row.extra;
    }
    reservations[i] = r;
  }
  if (text !== undefined) reuseRows(text, reservations);
  return { cidr, network, lastOffset, reservations };
}

/**
 * A file written by encodePoolFields holds one reservation per line. Remember each line as the
 * encoded row of the reservation just decoded from it, so that a fresh process (one CNI call)
 * writes the pool back by joining lines instead of re-encoding every row. Only a line that decodes
 * to exactly the same fields is reused; a file laid out otherwise is simply re-encoded.
 */
function reuseRows(text: string, reservations: readonly Reservation[]): void {
  const start = text.indexOf('"reservations":[\n');
  if (start < 0 || reservations.length === 0) return;
  const lines = text.slice(start + '"reservations":[\n'.length).split("\n");
  // Row i must be alone on line i, and the line after the last row must close the array.
  if (lines.length <= reservations.length || !(lines[reservations.length] as string).startsWith("]")) return;
  const rows: string[] = new Array(reservations.length);
  for (let i = 0; i < reservations.length; i++) {
    const line = lines[i] as string;
    const row = i < reservations.length - 1 ? (line.endsWith(",") ? line.slice(0, -1) : undefined) : line;
    const r = reservations[i] as Reservation;
    if (row === undefined || !row.endsWith("}") || !row.startsWith(`{"offset":"${r.offset}","containerId":`)) return;
    rows[i] = row;
  }
  for (let i = 0; i < rows.length; i++) rowCache.set(reservations[i] as Reservation, rows[i] as string);
}

// --------------------------------------------------------------------------------------------- claims

export function encodeClaimFields(claim: Claim): string {
  return JSON.stringify(claimToRecord(claim)).slice(1, -1);
}

export function decodeClaim(json: Json): Claim {
  const pool = json.pool;
  const k = json.key;
  if (!isObject(pool)) throw new DecodeError('claim: "pool" must be an object');
  if (!isObject(k)) throw new DecodeError('claim: "key" must be an object');
  const claim: { -readonly [K in keyof Claim]: Claim[K] } = {
    pool: { network: str(pool, "network", "claim pool"), cidr: str(pool, "cidr", "claim pool") },
    key: key(str(k, "containerId", "claim key"), str(k, "ifName", "claim key"), "claim key"),
  };
  const podRef = optStr(json, "podRef", "claim");
  if (podRef !== undefined) claim.podRef = podRef;
  return claim;
}
