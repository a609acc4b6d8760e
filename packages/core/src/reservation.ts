import type { AttachmentKey } from "./key.js";
import { sameKey } from "./key.js";

/** One held address: its offset in the pool's CIDR, the exact attachment key, and owner metadata. */
export interface Reservation {
  /** Offset from the pool's network address (exact; 128-bit for IPv6). */
  readonly offset: bigint;
  readonly key: AttachmentKey;
  /** `namespace/name` of the pod, when known. */
  readonly podRef?: string;
  /** The pod's UID, when known: the liveness key for reconciling. */
  readonly podUid?: string;
  /** Creation time, ISO 8601 (core is pure: the caller passes the clock). */
  readonly createdAt?: string;
  /**
   * Sticky (DESIGN.md, "Sticky addresses"): seconds the address is kept for its pod (`podRef`)
   * once released. Recorded at ADD on a sticky network; absent on every other reservation.
   */
  readonly sticky?: number;
  /**
   * Sticky only: when the attachment was released (DEL, or a reconciler/GC/CLI release) — the
   * address is then *kept* for `podRef`, held by no live attachment, until `releasedAt + sticky`.
   */
  readonly releasedAt?: string;
  /** Fields a store read but does not interpret; written back unchanged. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** True when two reservations are the same in every field a conditional release compares. */
export function sameReservation(a: Reservation, b: Reservation): boolean {
  return (
    a.offset === b.offset &&
    sameKey(a.key, b.key) &&
    a.podRef === b.podRef &&
    a.podUid === b.podUid &&
    a.createdAt === b.createdAt &&
    a.sticky === b.sticky &&
    a.releasedAt === b.releasedAt
  );
}

/** A sticky reservation whose attachment was released: kept for its pod, held by no attachment. */
export function isKept(r: Reservation): boolean {
  return r.releasedAt !== undefined;
}

/** Whether a kept reservation's keep time has run out at `now` (an unreadable time counts as run out). */
export function keepExpired(r: Reservation, now: Date): boolean {
  if (r.releasedAt === undefined) return false;
  const released = Date.parse(r.releasedAt);
  return Number.isNaN(released) || now.getTime() - released >= (r.sticky ?? 0) * 1000;
}
