import { claimAddress, dropClaim } from "./claims.js";
import { isOutcomeUnknown, StoreConflictError } from "./errors.js";
import { parseCidr, parseIp } from "./ip.js";
import { type AttachmentKey, sameKey } from "./key.js";
import { Pool } from "./pool.js";
import { protocolBreaks } from "./protocol-breaks.js";
import type { Reservation } from "./reservation.js";
import { type RetryOptions, withConflictRetry } from "./retry.js";
import { type Claim, type ClaimRef, type IpamStore, type PoolRef, poolId, type StoredPool, samePoolRef, type Version } from "./store.js";

/**
 * Claims that a call wrote and must leave matching the pool (DESIGN.md, "Claims": no dangling
 * claims). On stores without transactions a claim and its pool are two writes; a call whose pool
 * write lost a race (a conflict) may have written a claim that now names it while the pool holds
 * the address for somebody else, or for nobody. Such a claim is *owed*: before the call answers,
 * it is made to match the pool as re-read — rewritten to name the pool's entry, or deleted when
 * the pool holds the address for nobody — each step a compare-and-swap at the version the call
 * itself wrote, so a claim changed by anyone since is theirs and left alone.
 *
 * A judgement is only as good as the pool read it rests on, so it is **fenced**: a write of that
 * pool at the version read (the call's own next pool write, or an unchanged rewrite) must succeed
 * after a rewrite and before a delete. Then nobody who read the pool earlier can still write it —
 * neither a release of the entry the claim was rewritten to name (whose claim read came before the
 * rewrite; it re-reads on its conflict), nor an allocation of the address that is about to lose
 * its claim. A fence that conflicts means the pool changed: read it again and judge again.
 */

/** The holder a claim of `address` in `pool` should name: its entry there, or undefined when none. */
export function holderAt(pool: Pool, address: string): Reservation | undefined {
  const ip = parseIp(address);
  const offset = ip.value - pool.cidr.network;
  return offset >= 0n && offset < pool.cidr.size ? pool.atOffset(offset) : undefined;
}

/** The claim content that names `reservation` of `ref`. */
export function claimOf(ref: PoolRef, reservation: Reservation): Claim {
  return { pool: ref, key: reservation.key, ...(reservation.podRef === undefined ? {} : { podRef: reservation.podRef }) };
}

/** True when `claim` names exactly this entry (pool, key and podRef). */
export function claimMatches(claim: Claim, ref: PoolRef, reservation: Reservation): boolean {
  return samePoolRef(claim.pool, ref) && sameKey(claim.key, reservation.key) && (claim.podRef ?? "") === (reservation.podRef ?? "");
}

interface Owed {
  ref: ClaimRef;
  /** Undefined: the call's claim write has an unknown outcome; the next judgement reads the claim to find out. */
  version: Version | undefined;
  claim: Claim;
  /** Judged against the pool read last: delete once fenced (the pool holds the address for nobody). */
  free: boolean;
}

/** The claims one allocation in one pool owes (see above). Used by `createIpam` on stores without `commit`. */
export class OwedClaims {
  private readonly owed = new Map<string, Owed>();

  constructor(
    private readonly store: IpamStore,
    private readonly pool: PoolRef,
  ) {}

  get size(): number {
    return this.owed.size;
  }

  /**
   * A claim this call wrote (at `version`) whose pool write conflicted or has an unknown outcome;
   * or (`version` undefined) a claim write of unknown outcome: the next judgement reads the claim,
   * and owes it only if it is ours (it names this pool, key and podRef).
   */
  add(ref: ClaimRef, claim: Claim, version: Version | undefined): void {
    this.owed.set(ref.address, { ref, version, claim, free: false });
  }

  /** The call claims this address again: the claim step takes it over from whatever version it finds. */
  forget(ref: ClaimRef): void {
    this.owed.delete(ref.address);
  }

  /**
   * Judges every owed claim against `pool` as just read, before the call writes it: a claim whose
   * address the pool holds is rewritten (if it differs) to name that entry; one whose address it
   * does not hold is marked for deletion after the fence. A claim changed by anyone else is dropped.
   */
  async judge(pool: Pool): Promise<void> {
    for (const [id, owed] of this.owed) {
      if (owed.version === undefined) {
        const read = await this.store.readClaim(owed.ref, { fresh: true });
        const ours = read !== undefined && samePoolRef(read.claim.pool, this.pool) && sameClaim(read.claim, owed.claim);
        if (!ours) {
          this.owed.delete(id); // it did not land, or somebody else's since
          continue;
        }
        owed.version = read.version;
      }
      const holder = holderAt(pool, owed.ref.address);
      owed.free = holder === undefined;
      if (holder === undefined || claimMatches(owed.claim, this.pool, holder)) continue;
      const claim = claimOf(this.pool, holder);
      try {
        owed.version = await this.store.writeClaim(owed.ref, claim, owed.version);
        owed.claim = claim;
      } catch (error) {
        if (isOutcomeUnknown(error)) {
          // the rewrite may have landed: the next judgement reads the claim (ours if it is this content)
          owed.version = undefined;
          owed.claim = claim;
        }
        if (!(error instanceof StoreConflictError)) throw error;
        this.owed.delete(id); // somebody else's now
      }
    }
  }

  /** The pool was written at the version judged against: that was the fence. Deletes the free ones. */
  async fenced(): Promise<void> {
    const owed = [...this.owed.values()];
    this.owed.clear();
    for (const o of owed) if (o.free && o.version !== undefined) await dropSettled(this.store, o.ref, o.version);
  }

  /**
   * Settles what is still owed when the call writes no pool of its own (it found its key held, or
   * ends in an error): re-read, judge, fence with an unchanged rewrite of the pool. Best effort: a
   * claim still owed after `retry` runs out (or a store failure) is left for the reconciler.
   */
  async settle(retry: RetryOptions): Promise<void> {
    if (this.owed.size === 0) return;
    await withConflictRetry(async () => {
      const stored = await this.store.readPool(this.pool);
      await this.judge(stored?.pool ?? this.empty());
      if (this.owed.size === 0) return;
      await fence(this.store, this.pool, stored);
      await this.fenced();
    }, retry);
  }

  private empty(): Pool {
    return Pool.empty(parseCidr(this.pool.cidr), { name: poolId(this.pool) });
  }
}

/** Rewrites the pool unchanged at the version read (creates it empty when it was absent): anybody who read it earlier now fails their write. */
export async function fence(store: IpamStore, ref: PoolRef, stored: StoredPool | undefined): Promise<void> {
  if (stored !== undefined) await store.writePool(ref, stored.pool, stored.version);
  else await store.writePool(ref, Pool.empty(parseCidr(ref.cidr), { name: poolId(ref) }), undefined);
}

/** What {@link repairClaim} did. */
export type ClaimRepair =
  /** The claim names the entry that holds its address: nothing to do. */
  | { kind: "consistent" }
  /** Rewritten to name the entry that holds the address (`claim`). */
  | { kind: "rewritten"; claim: Claim }
  /** Deleted: no pool holds the address. */
  | { kind: "deleted" }
  /** Changed by somebody else since read (or since `expected`): theirs, left alone. */
  | { kind: "changed" }
  /** No claim there. */
  | { kind: "absent" }
  /** Two pools hold the address: left as it is for an operator (a double hold is not the claim's to settle). */
  | { kind: "ambiguous"; holders: PoolRef[] };

export interface RepairClaimOptions {
  /** Repair only the claim at this version (a reconciler's observation); undefined: as read now. */
  expected?: Version;
  /** Other pools that may hold the address (those of the claim's network containing it). The named pool is always read. */
  pools?: readonly PoolRef[];
  /** The caller has just written the claim at `expected` (a reconciler restoring a missing one): a match is fenced too. */
  written?: boolean;
  /** Repair only a claim naming this pool and key (a release's own); any other is somebody's in flight: "changed". */
  naming?: { pool: PoolRef; key: AttachmentKey };
  retry?: RetryOptions;
}

/** Same content: pool, key and podRef. */
function sameClaim(a: Claim, b: Claim): boolean {
  return samePoolRef(a.pool, b.pool) && sameKey(a.key, b.key) && (a.podRef ?? "") === (b.podRef ?? "");
}

/** A pool ipamkit can allocate in at all: not a host route (Whereabouts' pool-less reservations name one). */
function allocatable(ref: PoolRef): boolean {
  const cidr = parseCidr(ref.cidr);
  return cidr.prefix <= (cidr.family === 4 ? 30 : 126);
}

/**
 * Makes one claim match the pools, as read now, under the fence rule above: a claim whose address
 * no pool holds is deleted after its named pool is fenced; one whose address a pool holds for
 * another entry is rewritten to name that entry, then that pool is fenced (and the named pool
 * first, when it is another). Every claim step is a compare-and-swap at the version read (or the
 * version this repair wrote); a fence that conflicts starts again from fresh reads. For the
 * reconciler and for a release whose claim delete met a changed claim; allocations use
 * {@link OwedClaims}, whose fence is their own pool write.
 */
export async function repairClaim(store: IpamStore, ref: ClaimRef, options: RepairClaimOptions = {}): Promise<ClaimRepair> {
  let expected = options.expected;
  let rewritten: Claim | undefined;
  /** A claim this repair (or its caller) wrote is only settled by a fence, even where it matches. */
  let wrote = options.written === true;
  /** A rewrite of unknown outcome: found as this content, it is ours (and is fenced like any rewrite). */
  let unsure: Claim | undefined;
  return withConflictRetry(async (_attempt, { afterUnknown }): Promise<ClaimRepair> => {
    const existing = await store.readClaim(ref, { fresh: true });
    if (afterUnknown && unsure !== undefined && existing !== undefined && sameClaim(existing.claim, unsure)) {
      expected = existing.version;
      rewritten = unsure;
      wrote = true;
    }
    unsure = undefined;
    if (existing === undefined) return rewritten === undefined ? { kind: "absent" } : { kind: "changed" };
    if (expected !== undefined && existing.version !== expected) return { kind: "changed" };
    const { naming } = options;
    if (!wrote && naming !== undefined && !(poolId(existing.claim.pool) === poolId(naming.pool) && sameKey(existing.claim.key, naming.key)))
      return { kind: "changed" };
    const named = existing.claim.pool;
    const candidates = [named, ...(options.pools ?? []).filter((p) => poolId(p) !== poolId(named))];
    const reads = await Promise.all(candidates.map((p) => store.readPool(p)));
    const holding = candidates.flatMap((p, i) => {
      const stored = reads[i];
      const holder = stored === undefined ? undefined : holderAt(stored.pool, ref.address);
      return holder === undefined ? [] : [{ ref: p, stored: stored as StoredPool, holder }];
    });
    if (holding.length > 1) return { kind: "ambiguous", holders: holding.map((h) => h.ref) };
    const [held] = holding;
    if (held !== undefined && claimMatches(existing.claim, held.ref, held.holder)) {
      if (wrote) await fence(store, held.ref, held.stored);
      return rewritten === undefined ? { kind: "consistent" } : { kind: "rewritten", claim: rewritten };
    }
    // the named pool first: an allocation of it still in flight must not land once the claim moves or goes
    if ((held === undefined || poolId(held.ref) !== poolId(named)) && allocatable(named) && !protocolBreaks.repairNoFence)
      await fence(store, named, reads[0]);
    if (held === undefined) return (await dropClaim(store, ref, existing.version)) ? { kind: "deleted" } : { kind: "changed" };
    const claim = claimOf(held.ref, held.holder);
    try {
      expected = await store.writeClaim(ref, claim, existing.version);
      rewritten = claim;
      wrote = true;
    } catch (error) {
      if (isOutcomeUnknown(error)) unsure = claim;
      if (!(error instanceof StoreConflictError)) throw error;
      return { kind: "changed" };
    }
    await fence(store, held.ref, held.stored);
    return { kind: "rewritten", claim };
  }, options.retry);
}

/**
 * `dropClaim`, its own unknown outcome found out by the retry helper: the delete sent again at the
 * same version is refused (the claim is gone, or changed: false) or done.
 */
export function dropSettled(store: IpamStore, ref: ClaimRef, version: Version, retry?: RetryOptions): Promise<boolean> {
  return withConflictRetry(() => dropClaim(store, ref, version), retry);
}

/** A pool write that claims one address first. */
export interface ClaimedWrite {
  claimRef: ClaimRef;
  claim: Claim;
  ref: PoolRef;
  pool: Pool;
  expected: Version | undefined;
}

/**
 * Stores without transactions: claim (fenced protocol), then the pool write. Returns the holder
 * when taken. A claim left by a pool write that lost a race is undone before the call answers or
 * retries: one created from nothing is deleted at once (nobody else relies on its version); one
 * taken over from somebody is owed (`OwedClaims`): it is made to match the pool as re-read, fenced
 * by the next pool write. A write of unknown outcome (the claim's or the pool's) may have landed:
 * its claim is owed either way — judged against the pool as the retry helper's next attempt
 * re-reads it (withConflictRetry), which also finds out whether the pool write landed.
 */
export async function claimThenWrite(
  store: IpamStore,
  { claimRef, claim, ref, pool, expected }: ClaimedWrite,
  owed: OwedClaims | undefined,
): Promise<Claim | undefined> {
  owed?.forget(claimRef);
  let outcome: Awaited<ReturnType<typeof claimAddress>>;
  try {
    outcome = await claimAddress(store, claimRef, claim);
  } catch (error) {
    // the claim write may have landed: ours if the next read finds it naming this entry
    if (isOutcomeUnknown(error)) owed?.add(claimRef, claim, undefined);
    throw error;
  }
  if (outcome.kind === "taken") return outcome.by;
  try {
    await store.writePool(ref, pool, expected);
  } catch (error) {
    // any other failure wrote nothing (a conflict, a fence broken before the write): the claim goes
    if (isOutcomeUnknown(error)) owed?.add(claimRef, claim, outcome.version);
    else if (outcome.created) await dropSettled(store, claimRef, outcome.version).catch(() => undefined);
    else owed?.add(claimRef, claim, outcome.version);
    throw error;
  }
  // this write, at the version the owed claims were judged against, was their fence
  await owed?.fenced();
  return undefined;
}
