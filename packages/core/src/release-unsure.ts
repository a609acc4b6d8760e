import type { ConditionalReleaseOutcome } from "./allocator.js";
import { type AttachmentKey, formatKey, sameKey } from "./key.js";
import type { Pool } from "./pool.js";
import type { Reservation } from "./reservation.js";
import type { ClaimRef, Version } from "./store.js";

/** What a release takes out of a pool as read: the pool after, what left it, and one outcome per request. */
export interface ReleaseDecision {
  pool: Pool;
  released: Reservation[];
  outcomes: ConditionalReleaseOutcome[];
  /** Sticky reservations marked kept (still in `pool`, their claims kept). */
  kept?: number;
}

/** A claim a release deletes after its pool write (stores without `commit`), at the version read before it. */
export interface LaterDrop {
  ref: ClaimRef;
  key: AttachmentKey;
  version: Version;
}

/** A release's pool write of unknown outcome: what it took out, and the claims to delete after it. */
export interface UnsureRelease {
  released: readonly Reservation[];
  claims: LaterDrop[];
}

/**
 * A release found nothing (more) to take out after its earlier pool write had an unknown outcome:
 * what that write released and the pool (as read now; undefined: gone) no longer holds, it did
 * release — reported released, their claims deleted after (each at the version read before that
 * write, so a claim anybody changed since is left alone).
 */
export function landed(
  decision: ReleaseDecision,
  unsure: UnsureRelease | undefined,
  pool: Pool | undefined,
): ReleaseDecision & { dropLater?: LaterDrop[] } {
  if (unsure === undefined) return decision;
  const gone = unsure.released.filter((r) => {
    const now = pool?.atOffset(r.offset);
    return now === undefined || !sameKey(now.key, r.key);
  });
  if (gone.length === 0) return decision;
  const goneKeys = new Set(gone.map((r) => formatKey(r.key)));
  const dropLater = unsure.claims.filter((c) => goneKeys.has(formatKey(c.key)));
  // one reservation asked for (a DEL, a releaseIf): "absent" now, because the landed write released it
  const outcomes: ConditionalReleaseOutcome[] =
    decision.outcomes.length === 1 && decision.outcomes[0] === "absent" ? ["released"] : decision.outcomes;
  return { ...decision, released: [...decision.released, ...gone], outcomes, ...(dropLater.length > 0 ? { dropLater } : {}) };
}
