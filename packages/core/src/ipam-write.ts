import type { Allocation } from "./allocator.js";
import { type ClaimedWrite, claimThenWrite, type OwedClaims } from "./claim-repair.js";
import { claimRefFor, planClaim } from "./claims.js";
import type { AllocateInput } from "./ipam.js";
import type { IpamContext } from "./ipam-context.js";
import { sameKey } from "./key.js";
import type { Reservation } from "./reservation.js";
import type { Claim, ClaimRef, PoolRef, StoreWrite, Version } from "./store.js";

/**
 * Sticky: writes a pool in which a reservation was rebound (compare-and-swapped on the whole
 * pool, entry-level stores too), its claim rewritten to name the new key with the pool where the
 * key changed. False when another pool holds the claim (never taken over).
 */
export async function writeRebound(
  ctx: IpamContext,
  ref: PoolRef,
  result: Allocation,
  expected: Version | undefined,
  input: AllocateInput,
  owed: OwedClaims | undefined,
): Promise<boolean> {
  const { store } = ctx;
  const rebound = result.rebound as Reservation;
  if (!ctx.protect || sameKey(rebound.key, input.key)) {
    await store.writePool(ref, result.pool, expected);
    return true;
  }
  const claimRef = claimRefFor(ref, result.reservation.offset);
  const claim = { pool: ref, key: input.key, ...(input.podRef === undefined ? {} : { podRef: input.podRef }) };
  if (!ctx.transactions) {
    return (await claimThenWrite(store, { claimRef, claim, ref, pool: result.pool, expected }, owed)) === undefined;
  }
  return (await claimAndWriteAtomically(ctx, { claimRef, claim, ref, pool: result.pool, expected })) === undefined;
}

/** Stores with transactions: the claim and the pool in one commit. Returns the holder when taken. */
export async function claimAndWriteAtomically(
  { store }: IpamContext,
  { claimRef, claim, ref, pool, expected }: ClaimedWrite,
): Promise<Claim | undefined> {
  const plan = await planClaim(store, claimRef, claim);
  if (plan.kind === "taken") return plan.by;
  await store.commit([{ kind: "pool", ref, pool, expected }, ...plan.writes]);
  return undefined;
}

/** Entry-level stores: reserve one address (and claim it) in one commit; conflicts only on that address or key. */
export async function reserveEntry(
  { store }: IpamContext,
  ref: PoolRef,
  reservation: Reservation,
  lastOffset: bigint | undefined,
  claimed: { claimRef: ClaimRef; claim: Claim } | undefined,
  attempt: number,
): Promise<Claim | undefined> {
  const steps: StoreWrite[] = [{ kind: "reserve", ref, reservation, lastOffset }];
  if (claimed !== undefined && attempt === 1) {
    // Optimistic first try: most addresses are unclaimed, so claim with create-if-absent in the
    // same transaction instead of reading first; a conflict retries with the full protocol below.
    steps.push({ kind: "claim", ref: claimed.claimRef, claim: claimed.claim, expected: undefined });
  } else if (claimed !== undefined) {
    const plan = await planClaim(store, claimed.claimRef, claimed.claim);
    if (plan.kind === "taken") return plan.by;
    steps.push(...plan.writes);
  }
  await store.commit(steps);
  return undefined;
}
