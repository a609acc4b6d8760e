import { AddressUnavailableError, InvalidRequestError, RangeExhaustedError } from "./errors.js";
import { cidrContains, formatIp, type Ip, ipAt, parseIp } from "./ip.js";
import { type AttachmentKey, formatKey, isLegacyKey, sameKey } from "./key.js";
import type { Pool } from "./pool.js";
import { blockedAt, isAssignable, type Range } from "./range.js";
import { type Reservation, sameReservation } from "./reservation.js";
import { keptFor, type Mutable, markKept, rebind } from "./sticky.js";

/**
 * Which free address a dynamic allocation takes.
 * - `lowest-free`: the lowest free address (Whereabouts' behaviour; the default for parity).
 * - `round-robin`: the next free address after the last allocation, wrapping around (host-local's):
 *   a freed address is not handed out again until the rest of the range has been used, so a
 *   crash-looping pod does not get a just-released IP that stale ARP caches still point at.
 */
export type AllocationPolicy = "lowest-free" | "round-robin";

export interface AllocateRequest {
  key: AttachmentKey;
  /** A specific address to reserve (static). */
  address?: string;
  policy?: AllocationPolicy;
  podRef?: string;
  podUid?: string;
  /**
   * A sticky network (DESIGN.md, "Sticky addresses"): the keep time in seconds, recorded on the
   * reservation; and the pod's kept reservation (same podRef and ifName) is rebound to this key.
   */
  sticky?: number;
  /** Creation time to record (ISO 8601); core has no clock. */
  now?: string;
  /** Offsets not to hand out in this attempt (e.g. held in an overlapping pool). */
  avoid?: ReadonlySet<bigint>;
  /**
   * After a lost race, pick at random among the first `among` free addresses the policy would
   * hand out, so that concurrent allocators stop colliding on the same one.
   */
  spread?: { among: number; random: () => number };
}

export interface Allocation {
  pool: Pool;
  reservation: Reservation;
  address: Ip;
  /** True when the key already held this address (idempotent repeat), or adopted it (below). */
  reused: boolean;
  /**
   * The legacy entry (no ifName) of the key's container that this allocation adopted: the same
   * address, now under the exact key — `pool` differs from the input and must be written.
   */
  adopted?: Reservation;
  /**
   * Sticky: the reservation of this pod that the allocation rebound to the key (kept after a
   * release, or held by a sandbox of the pod's previous UID) — `pool` differs and must be written;
   * when its key differs, so must the address's claim.
   */
  rebound?: Reservation;
}

function reservationFor(req: AllocateRequest, offset: bigint): Reservation {
  const r: Mutable<Reservation> = { offset, key: req.key };
  if (req.podRef !== undefined) r.podRef = req.podRef;
  if (req.podUid !== undefined) r.podUid = req.podUid;
  if (req.now !== undefined) r.createdAt = req.now;
  if (req.sticky !== undefined) r.sticky = req.sticky;
  return r;
}

/**
 * The lowest free assignable offset in from..to, or undefined. Never enumerates the range: each
 * step jumps over one excluded interval or one run of consecutive reservations (O(log n) each).
 */
export function findFree(pool: Pool, range: Range, from: bigint, to: bigint, avoid?: ReadonlySet<bigint>): bigint | undefined {
  const list = pool.list;
  let candidate = from < range.first ? range.first : from;
  const end = to > range.last ? range.last : to;
  while (candidate <= end) {
    const blocked = blockedAt(range, candidate);
    if (blocked !== undefined) {
      candidate = blocked.to + 1n;
      continue;
    }
    const i = list.indexAtOrAfter(candidate);
    const next = list.at(i);
    if (next === undefined || next.offset !== candidate) {
      if (avoid?.has(candidate) === true) {
        candidate += 1n;
        continue;
      }
      return candidate;
    }
    candidate = (list.at(list.runEnd(i)) as Reservation).offset + 1n;
  }
  return undefined;
}

function pickDynamic(pool: Pool, range: Range, req: AllocateRequest): bigint {
  const avoid = req.avoid;
  let offset: bigint | undefined;
  const cursor = pool.lastOffset;
  if (req.policy === "round-robin" && cursor !== undefined && cursor >= range.first && cursor < range.last) {
    offset = findFree(pool, range, cursor + 1n, range.last, avoid) ?? findFree(pool, range, range.first, cursor, avoid);
  } else {
    offset = findFree(pool, range, range.first, range.last, avoid);
  }
  if (offset === undefined) throw new RangeExhaustedError(range.cidr.text);
  if (req.spread === undefined || req.spread.among <= 1) return offset;
  const candidates = [offset];
  for (let next = offset; candidates.length < req.spread.among; ) {
    const candidate = findFree(pool, range, next + 1n, range.last, avoid);
    if (candidate === undefined) break;
    candidates.push(candidate);
    next = candidate;
  }
  return candidates[Math.floor(req.spread.random() * candidates.length)] ?? offset;
}

function pickStatic(pool: Pool, range: Range, req: AllocateRequest, text: string): bigint {
  const ip = parseIp(text);
  if (!cidrContains(range.cidr, ip)) throw new AddressUnavailableError(text, `outside range ${range.cidr.text}`);
  const offset = ip.value - range.cidr.network;
  if (!isAssignable(range, offset)) {
    throw new AddressUnavailableError(text, "outside range_start..range_end, excluded, the gateway, or not usable");
  }
  const holder = pool.atOffset(offset);
  if (holder !== undefined) throw new AddressUnavailableError(text, `held by ${formatKey(holder.key)}`);
  if (req.avoid?.has(offset) === true) throw new AddressUnavailableError(text, "held in an overlapping range");
  return offset;
}

/**
 * Allocates one address in one range. Pure: returns the new pool and never mutates the old one.
 * Idempotent: a key that already holds an address in this pool gets that same address back.
 * A key without an exact entry whose container holds legacy entries (Whereabouts < 0.8, no
 * ifName) adopts the lowest of them: the same address, the entry rewritten under the exact key
 * (DESIGN.md, "Legacy entries") — never a second address for the container.
 */
export function allocate(pool: Pool, range: Range, req: AllocateRequest): Allocation {
  if (pool.cidr.text !== range.cidr.text) {
    throw new InvalidRequestError(`pool ${pool.name} is for ${pool.cidr.text}, not ${range.cidr.text}`);
  }
  const existing = heldFor(pool, req);
  if (existing !== undefined) {
    const address = ipAt(pool.cidr, existing.offset);
    if (req.address !== undefined && parseIp(req.address).value !== address.value) {
      const holder = sameKey(existing.key, req.key)
        ? formatKey(req.key)
        : `container ${req.key.containerId} (a Whereabouts entry without ifname)`;
      throw new AddressUnavailableError(req.address, `${holder} already holds ${formatIp(address)}`);
    }
    if (sameKey(existing.key, req.key)) {
      if (existing.releasedAt === undefined) return { pool, reservation: existing, address, reused: true };
      // this very key, kept after its DEL (a repeated ADD of the sandbox): held again
      const reservation = rebind(existing, req);
      return {
        pool: pool.withoutAt(existing.offset).with(reservation, { moveCursor: false }),
        reservation,
        address,
        reused: true,
        rebound: existing,
      };
    }
    const reservation = adoption(existing, req);
    return {
      pool: pool.withoutAt(existing.offset).with(reservation, { moveCursor: false }),
      reservation,
      address,
      reused: true,
      adopted: existing,
    };
  }
  const kept = keptFor(pool, req);
  if (kept !== undefined) {
    const reservation = rebind(kept, req);
    return {
      pool: pool.withoutAt(kept.offset).with(reservation, { moveCursor: false }),
      reservation,
      address: ipAt(pool.cidr, kept.offset),
      reused: false,
      rebound: kept,
    };
  }
  const offset = req.address === undefined ? pickDynamic(pool, range, req) : pickStatic(pool, range, req, req.address);
  const reservation = reservationFor(req, offset);
  return {
    pool: pool.with(reservation, { moveCursor: req.address === undefined }),
    reservation,
    address: ipAt(pool.cidr, offset),
    reused: false,
  };
}

/** The exact entry of the key, else the legacy entry it adopts: at a requested address if one is there, else the lowest. */
function heldFor(pool: Pool, req: AllocateRequest): Reservation | undefined {
  const exact = pool.exactly(req.key);
  if (exact !== undefined || isLegacyKey(req.key)) return exact;
  const legacy = pool.legacyOf(req.key.containerId);
  if (req.address !== undefined) {
    const wanted = parseIp(req.address).value - pool.cidr.network;
    const there = legacy.find((r) => r.offset === wanted);
    if (there !== undefined) return there;
  }
  return legacy[0];
}

/** A legacy entry under the exact key: its address and creation time kept, the request's pod recorded. */
function adoption(legacy: Reservation, req: AllocateRequest): Reservation {
  const r: Mutable<Reservation> = { ...legacy, key: req.key };
  if (req.podRef !== undefined) r.podRef = req.podRef;
  if (req.podUid !== undefined) r.podUid = req.podUid;
  if (r.createdAt === undefined && req.now !== undefined) r.createdAt = req.now;
  return r;
}

export interface MultiAllocateRequest extends Omit<AllocateRequest, "address" | "avoid"> {
  /** Specific addresses; each is placed in the range that contains it, the other ranges allocate dynamically. */
  addresses?: readonly string[];
  /** Offsets to avoid, per entry index. */
  avoid?: readonly (ReadonlySet<bigint> | undefined)[];
}

/**
 * One address per range (dual-stack, multi-IP), all-or-nothing: either every range gets an
 * address and every new pool is returned, or it throws and nothing changed.
 */
export function allocateAll(entries: readonly { pool: Pool; range: Range }[], req: MultiAllocateRequest): Allocation[] {
  const statics = new Map<number, string>();
  for (const text of req.addresses ?? []) {
    const ip = parseIp(text);
    const index = entries.findIndex((e, i) => !statics.has(i) && cidrContains(e.range.cidr, ip));
    if (index < 0) throw new InvalidRequestError(`requested address ${text} is in none of the configured ranges (or twice in one)`);
    statics.set(index, text);
  }
  return entries.map((entry, i) => {
    const single: AllocateRequest = { ...req, avoid: req.avoid?.[i] };
    const address = statics.get(i);
    if (address !== undefined) single.address = address;
    return allocate(entry.pool, entry.range, single);
  });
}

export interface Release {
  pool: Pool;
  /** The reservation removed; undefined when the key held nothing ("nothing released", not an error). */
  released: Reservation | undefined;
  /** Sticky: the reservation marked kept instead of removed (`pool` holds it with `releasedAt`). */
  kept?: Reservation;
}

export interface ReleaseOptions {
  /**
   * The release time (ISO 8601) on a sticky network: a sticky reservation is then marked kept
   * for its pod rather than removed, and a kept one stays as it is. Without it (the network is
   * not sticky, or no longer), any reservation of the key is removed, kept or not.
   */
  keepAt?: string;
}

/**
 * Releases the reservation of exactly this key. Never by podRef, never by position. A key without
 * an exact entry whose container holds legacy entries (no ifName) releases the lowest of them: the
 * container is going away, and its other interfaces' DELs release the rest (DESIGN.md).
 */
export function release(pool: Pool, key: AttachmentKey, options: ReleaseOptions = {}): Release {
  const released = pool.forKey(key);
  if (released === undefined) return { pool, released };
  if (options.keepAt !== undefined && released.sticky !== undefined) {
    if (released.releasedAt !== undefined) return { pool, released: undefined }; // a repeated DEL
    const kept = markKept(released, options.keepAt);
    return { pool: pool.withoutAt(released.offset).with(kept, { moveCursor: false }), released: undefined, kept };
  }
  return { pool: pool.withoutAt(released.offset), released };
}

export type ConditionalReleaseOutcome = "released" | "absent" | "changed";

/**
 * For reconcilers: releases `expected` only if its address still holds exactly it (same key,
 * podRef, podUid, creation time and sticky fields). A reservation re-created in between is never
 * freed. With `keepAt`, an unreleased sticky reservation is marked kept instead (outcome "released").
 * "absent" when the key holds nothing any more, "changed" when it holds something else.
 */
export function releaseIf(
  pool: Pool,
  expected: Reservation,
  options: ReleaseOptions = {},
): Release & { outcome: ConditionalReleaseOutcome } {
  const current = pool.atOffset(expected.offset);
  if (current !== undefined && sameReservation(current, expected)) {
    if (options.keepAt !== undefined && current.sticky !== undefined && current.releasedAt === undefined) {
      // sticky: the first release keeps the address for the pod; releasing the kept one frees it
      const kept = markKept(current, options.keepAt);
      return { pool: pool.withoutAt(current.offset).with(kept, { moveCursor: false }), released: undefined, kept, outcome: "released" };
    }
    return { pool: pool.withoutAt(expected.offset), released: current, outcome: "released" };
  }
  const held = current !== undefined && sameKey(current.key, expected.key) ? current : pool.exactly(expected.key);
  return { pool, released: undefined, outcome: held === undefined ? "absent" : "changed" };
}
