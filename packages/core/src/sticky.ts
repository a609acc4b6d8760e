import type { AllocateRequest } from "./allocator.js";
import { isLegacyKey } from "./key.js";
import type { Pool } from "./pool.js";
import { protocolBreaks } from "./protocol-breaks.js";
import type { Reservation } from "./reservation.js";

/** A writable copy of a readonly record type. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Sticky addresses (DESIGN.md, "Sticky addresses"). The reservation of pod `req.podRef` that an
 * ADD of a new key on a sticky network takes over, if any: a sticky reservation of the same podRef
 * and the same interface name that is either kept (released, within or past its keep time — a
 * reconciler frees it when past) or held by another key for a *known, different* pod UID (a pod
 * name is unique in its namespace, so a new UID means the old pod object is gone: its sandbox
 * died with its node and was never DELeted). Never one whose recorded UID is unknown, never one
 * of the same UID (the same pod's other sandbox), never another pod's. O(reservations): only on
 * sticky networks, and only when the key holds nothing.
 */
export function keptFor(pool: Pool, req: AllocateRequest): Reservation | undefined {
  if (req.sticky === undefined || req.podRef === undefined || req.podRef === "" || isLegacyKey(req.key)) return undefined;
  if (req.address !== undefined) return undefined; // a requested address wins: allocated as asked
  if (protocolBreaks.stickyNoRebind) return undefined;
  let found: Reservation | undefined;
  for (const r of pool) {
    if (r.sticky === undefined || (r.podRef !== req.podRef && !protocolBreaks.stickyAnyPod) || r.key.ifName !== req.key.ifName) continue;
    const reborn =
      r.releasedAt !== undefined || (r.podUid !== undefined && r.podUid !== "" && req.podUid !== undefined && r.podUid !== req.podUid);
    if (!reborn) continue;
    // the most recently created one, should there be several (a pod reborn twice on dead nodes)
    if (found === undefined || (r.createdAt ?? "") > (found.createdAt ?? "")) found = r;
  }
  return found;
}

/** `kept` under the request's key and pod UID, held again: same address, a new creation time. */
export function rebind(kept: Reservation, req: AllocateRequest): Reservation {
  const { releasedAt: _released, ...rest } = kept;
  const r: Mutable<Reservation> = { ...rest, key: req.key };
  if (req.podRef !== undefined) r.podRef = req.podRef;
  if (req.podUid !== undefined) r.podUid = req.podUid;
  if (req.now !== undefined) r.createdAt = req.now;
  if (req.sticky !== undefined) r.sticky = req.sticky;
  return r;
}

/** `held` marked kept for its pod from `at` (ISO 8601). */
export function markKept(held: Reservation, at: string): Reservation {
  return { ...held, releasedAt: at };
}
