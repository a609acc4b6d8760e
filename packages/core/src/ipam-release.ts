import { release, releaseIf } from "./allocator.js";
import { dropSettled, repairClaim } from "./claim-repair.js";
import { claimRefFor, ownClaimVersions } from "./claims.js";
import { ipAt, parseCidr } from "./ip.js";
import type { Released, ReleaseInput } from "./ipam.js";
import { type IpamContext, refFor } from "./ipam-context.js";
import type { AttachmentKey } from "./key.js";
import { Pool } from "./pool.js";
import { protocolBreaks } from "./protocol-breaks.js";
import type { Range } from "./range.js";
import { type LaterDrop, landed, type ReleaseDecision, type UnsureRelease } from "./release-unsure.js";
import type { Reservation } from "./reservation.js";
import { withConflictRetry } from "./retry.js";
import type { PoolRef, StoreWrite } from "./store.js";

/**
 * The one release path. `decide` picks what to release from the pool as read (by exact key, or
 * only what is unchanged). Each claim's version is read *before* the pool write and the claim
 * deleted at that version — in the same commit where the store can, else right after (DESIGN.md).
 */
export async function releaseWhere(ctx: IpamContext, ref: PoolRef, decide: (pool: Pool) => ReleaseDecision): Promise<ReleaseDecision> {
  const { store, protect, entryWrites, transactions, retry } = ctx;
  /** The claims of a pool write of unknown outcome (separate writes): still to drop if it landed. */
  let unsure: UnsureRelease | undefined;
  /** protocolBreaks.staleDecision: the first decision, kept across attempts. */
  let first: ReleaseDecision | undefined;
  const done = await withConflictRetry(async (_attempt, { afterUnknown }): Promise<ReleaseDecision & { dropLater?: LaterDrop[] }> => {
    if (!afterUnknown) unsure = undefined;
    const stored = await store.readPool(ref);
    if (stored === undefined) return landed(decide(Pool.empty(parseCidr(ref.cidr))), unsure, undefined);
    const decision = protocolBreaks.staleDecision && first !== undefined ? first : decide(stored.pool);
    first ??= decision;
    if (decision.released.length === 0) {
      // the write of unknown outcome landed (what it released is gone): its claims are dropped now
      if (unsure !== undefined) return landed(decision, unsure, stored.pool);
      // sticky: reservations marked kept stay, with their claims
      if ((decision.kept ?? 0) > 0) await store.writePool(ref, decision.pool, stored.version);
      return decision;
    }
    const releasedClaims = (protect ? decision.released : []).map((r) => ({ ref: claimRefFor(ref, r.offset), key: r.key }));
    const versions = await ownClaimVersions(store, releasedClaims, ref);
    const claims = releasedClaims.flatMap((c, i) => {
      const version = versions[i];
      return version === undefined ? [] : [{ ref: c.ref, key: c.key, version }];
    });
    const deleteClaims: StoreWrite[] = claims.map((c) => ({ kind: "delete-claim", ref: c.ref, expected: c.version }));
    if (entryWrites && (decision.kept ?? 0) === 0) {
      const unreserve: StoreWrite[] = decision.released.map((reservation) => ({ kind: "unreserve", ref, reservation }));
      await store.commit([...unreserve, ...deleteClaims]);
      return decision;
    }
    if (deleteClaims.length > 0 && transactions) {
      await store.commit([{ kind: "pool", ref, pool: decision.pool, expected: stored.version }, ...deleteClaims]);
      return decision;
    }
    unsure = { released: decision.released, claims };
    await store.writePool(ref, decision.pool, stored.version);
    return claims.length > 0 ? { ...decision, dropLater: claims } : decision;
  }, retry);
  for (const claim of done.dropLater ?? []) {
    // changed since read: somebody took the address over (theirs, left alone), or rewrote the
    // claim to name this very entry after that read (a lost race's repair): that one is made to
    // match the pool as it is now
    if (await dropSettled(store, claim.ref, claim.version, retry)) continue;
    await repairClaim(store, claim.ref, { retry, naming: { pool: ref, key: claim.key } }).catch(() => undefined);
  }
  return done;
}

export async function releaseOne(
  ctx: IpamContext,
  ref: PoolRef,
  range: Range,
  key: AttachmentKey,
  sticky = false,
): Promise<Released | undefined> {
  const { released } = await releaseWhere(ctx, ref, (pool) => {
    const result = release(pool, key, sticky && !protocolBreaks.stickyFreeAtDel ? { keepAt: ctx.now().toISOString() } : {});
    if (result.kept !== undefined) return { pool: result.pool, released: [], outcomes: ["released"], kept: 1 };
    return result.released === undefined
      ? { pool, released: [], outcomes: ["absent"] }
      : { pool: result.pool, released: [result.released], outcomes: ["released"] };
  });
  const [reservation] = released;
  return reservation === undefined ? undefined : { pool: ref, address: ipAt(range.cidr, reservation.offset), reservation };
}

/** Releases exactly this key in every range (ranges holding nothing are fine); reports the first error after trying all. */
export async function releaseEach(ctx: IpamContext, input: ReleaseInput): Promise<Released[]> {
  const out: Released[] = [];
  const errors: unknown[] = [];
  for (const range of input.ranges) {
    try {
      const r = await releaseOne(ctx, refFor(input.network, range, input.node), range, input.key, input.sticky === true);
      if (r !== undefined) out.push(r);
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
  return out;
}

/** Takes every still-unchanged reservation of `expected` out of the pool (one write). */
export function releaseUnchanged(ctx: IpamContext, expected: readonly Reservation[]): (pool: Pool) => ReleaseDecision {
  return (pool) => {
    const decision: ReleaseDecision = { pool, released: [], outcomes: [], kept: 0 };
    const keepAt = ctx.now().toISOString();
    for (const reservation of expected) {
      const target = protocolBreaks.releaseByPodName ? (lastOfPod(decision.pool, reservation) ?? reservation) : reservation;
      const result = releaseIf(decision.pool, target, { keepAt });
      decision.pool = result.pool;
      decision.outcomes.push(result.outcome);
      if (result.released !== undefined) decision.released.push(result.released);
      if (result.kept !== undefined) decision.kept = (decision.kept ?? 0) + 1;
    }
    return decision;
  };
}

/** protocolBreaks.releaseByPodName: the pool's last reservation (by offset) of the same pod name. */
function lastOfPod(pool: Pool, reservation: Reservation): Reservation | undefined {
  return pool
    .reservations()
    .filter((r) => r.podRef === reservation.podRef)
    .at(-1);
}
