import { allocate } from "./allocator.js";
import { claimThenWrite, OwedClaims } from "./claim-repair.js";
import { claimRefFor } from "./claims.js";
import { AddressUnavailableError, InvalidRequestError } from "./errors.js";
import { cidrContains, formatIp, parseIp } from "./ip.js";
import type { AllocateInput, Assigned } from "./ipam.js";
import { type IpamContext, refFor } from "./ipam-context.js";
import { releaseOne } from "./ipam-release.js";
import { claimAndWriteAtomically, reserveEntry, writeRebound } from "./ipam-write.js";
import { Pool } from "./pool.js";
import type { Range } from "./range.js";
import { withConflictRetry } from "./retry.js";
import { type PoolRef, poolId } from "./store.js";

const MAX_PROBES = 1024;

/** After a lost race on an entry-level store, choose among this many free addresses. */
const SPREAD = 128;

export function placeStatics(ranges: readonly Range[], addresses: readonly string[] | undefined): (string | undefined)[] {
  const placed: (string | undefined)[] = ranges.map(() => undefined);
  for (const text of addresses ?? []) {
    const ip = parseIp(text);
    const index = ranges.findIndex((r, i) => placed[i] === undefined && cidrContains(r.cidr, ip));
    if (index < 0) throw new InvalidRequestError(`requested address ${text} is in none of the configured ranges (or twice in one)`);
    placed[index] = formatIp(ip);
  }
  return placed;
}

/** Every range, all-or-nothing: on failure, undo what this call reserved (by exact key), then report the first error. */
export async function allocateAll(ctx: IpamContext, input: AllocateInput, statics: readonly (string | undefined)[]): Promise<Assigned[]> {
  const done: Assigned[] = [];
  try {
    for (const [i, range] of input.ranges.entries()) {
      done.push(await allocateOne(ctx, refFor(input.network, range, input.node), range, input, statics[i]));
    }
    return done;
  } catch (error) {
    for (const a of done.filter((d) => !d.reused)) {
      await releaseOne(ctx, a.pool, a.range, input.key, input.sticky !== undefined).catch(() => undefined);
    }
    throw error;
  }
}

export async function allocateOne(
  ctx: IpamContext,
  ref: PoolRef,
  range: Range,
  input: AllocateInput,
  address: string | undefined,
): Promise<Assigned> {
  // claims this call wrote whose pool write lost a race: made to match the pool before it answers
  const owed = ctx.protect && !ctx.transactions ? new OwedClaims(ctx.store, ref) : undefined;
  try {
    return await probeAndWrite(ctx, ref, range, input, address, owed);
  } finally {
    await owed?.settle(ctx.retry).catch(() => undefined);
  }
}

export async function probeAndWrite(
  ctx: IpamContext,
  ref: PoolRef,
  range: Range,
  input: AllocateInput,
  address: string | undefined,
  owed: OwedClaims | undefined,
): Promise<Assigned> {
  const { store, protect, entryWrites, transactions } = ctx;
  let tried: bigint | undefined;
  /** An attempt found the key unplaced: found later, it was placed during this call (a write of unknown outcome that landed). */
  let unplaced = false;
  return withConflictRetry(async (attempt) => {
    const avoid = new Set<bigint>();
    for (let probe = 0; probe < MAX_PROBES; probe++) {
      const stored = await store.readPool(ref);
      const pool = stored?.pool ?? Pool.empty(range.cidr, { name: poolId(ref) });
      // what an earlier attempt owes is judged against this read, before any write of it
      await owed?.judge(pool);
      // Lost a race for the address tried last time (someone else holds it now): spread out.
      const lostRace = entryWrites && tried !== undefined && pool.atOffset(tried) !== undefined;
      const result = allocate(pool, range, {
        key: input.key,
        policy: input.policy ?? ctx.policy ?? "lowest-free",
        podRef: input.podRef,
        podUid: input.podUid,
        now: ctx.now().toISOString(),
        avoid,
        ...(address === undefined ? {} : { address }),
        ...(input.sticky === undefined ? {} : { sticky: input.sticky }),
        ...(lostRace ? { spread: { among: SPREAD, random: Math.random } } : {}),
      });
      tried = result.reservation.offset;
      // not reused when this call placed it: an all-or-nothing ADD must undo it on a later range's failure
      const reused = result.reused && !unplaced;
      if (!result.reused) unplaced = true;
      const assigned: Assigned = { pool: ref, range, address: result.address, reservation: result.reservation, reused };
      if (result.rebound !== undefined && !(await writeRebound(ctx, ref, result, stored?.version, input, owed))) {
        throw new AddressUnavailableError(formatIp(result.address), "kept for this pod, but claimed in an overlapping pool");
      }
      if (result.rebound !== undefined) return assigned;
      if (result.reused) {
        // a legacy entry (no ifname) adopted under the exact key: a change, compare-and-swapped like any
        if (result.adopted !== undefined) await store.writePool(ref, result.pool, stored?.version);
        return assigned;
      }
      if (!protect && !entryWrites) {
        await store.writePool(ref, result.pool, stored?.version);
        return assigned;
      }
      const claimRef = claimRefFor(ref, result.reservation.offset);
      const claim = { pool: ref, key: input.key, ...(input.podRef === undefined ? {} : { podRef: input.podRef }) };
      const taken = entryWrites
        ? await reserveEntry(ctx, ref, result.reservation, result.pool.lastOffset, protect ? { claimRef, claim } : undefined, attempt)
        : !transactions
          ? await claimThenWrite(store, { claimRef, claim, ref, pool: result.pool, expected: stored?.version }, owed)
          : await claimAndWriteAtomically(ctx, {
              claimRef,
              claim,
              ref,
              pool: result.pool,
              expected: stored?.version,
            });
      if (taken !== undefined) {
        if (address !== undefined) throw new AddressUnavailableError(address, `held in overlapping pool ${poolId(taken.pool)}`);
        avoid.add(result.reservation.offset);
        continue;
      }
      return assigned;
    }
    throw new InvalidRequestError(`gave up after ${MAX_PROBES} addresses of ${range.cidr.text} held in overlapping pools`);
  }, ctx.retry);
}
