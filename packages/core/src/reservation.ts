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
  /** Fields a store read but does not interpret; written back unchanged. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** True when two reservations are the same in every field a conditional release compares. */
export function sameReservation(a: Reservation, b: Reservation): boolean {
  return a.offset === b.offset && sameKey(a.key, b.key) && a.podRef === b.podRef && a.podUid === b.podUid && a.createdAt === b.createdAt;
}
