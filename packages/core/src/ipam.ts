import { type Allocation, type AllocationPolicy, allocate, type ConditionalReleaseOutcome, release, releaseIf } from "./allocator.js";
import { type ClaimedWrite, claimThenWrite, dropSettled, OwedClaims, repairClaim } from "./claim-repair.js";
import { claimRefFor, ownClaimVersions, planClaim } from "./claims.js";
import { AddressUnavailableError, InvalidRequestError } from "./errors.js";
import { cidrContains, formatIp, type Ip, ipAt, parseCidr, parseIp } from "./ip.js";
import { type AttachmentKey, sameKey } from "./key.js";
import { Pool } from "./pool.js";
import type { PoolCache } from "./pool-cache.js";
import type { Range } from "./range.js";
import { type LaterDrop, landed, type ReleaseDecision, type UnsureRelease } from "./release-unsure.js";
import type { Reservation } from "./reservation.js";
import { type ConflictCounter, type RetryOptions, withConflictRetry } from "./retry.js";
import { type Claim, type ClaimRef, type IpamStore, type PoolRef, poolId, type StoreWrite, type Version } from "./store.js";

export interface IpamOptions {
  store: IpamStore;
  /**
   * What this process remembers of pools (a long-lived process: the agent). The allocator teaches
   * it every pool it reads or writes; per-node blocks recall from it (see PoolCache).
   */
  cache?: PoolCache;
  /** Overlapping-range protection (Whereabouts' `enable_overlapping_ranges`). Default true. */
  overlappingRanges?: boolean;
  /** Default allocation policy. Default "lowest-free". */
  policy?: AllocationPolicy;
  /** Options for the one retry helper; `counter` collects conflicts. */
  retry?: RetryOptions;
  /** Clock for creation times. */
  now?: () => Date;
  /**
   * Mutual exclusion with writers that coordinate by lock (e.g. Whereabouts' Lease): each
   * `allocate` runs its writes inside it. Correctness never depends on it (every write stays
   * compare-and-swapped); it only keeps such writers from seeing our claim land between their
   * check and their create.
   */
  exclusive?: Exclusive;
}

/** Runs `fn` while holding a lock shared with other writers; see {@link IpamOptions.exclusive}. */
export type Exclusive = <T>(fn: () => Promise<T>) => Promise<T>;

export interface AllocateInput {
  /** `network_name`; "" for the unnamed network. */
  network?: string;
  /** One address per range, all-or-nothing. */
  ranges: readonly Range[];
  key: AttachmentKey;
  /** Specific addresses; each goes to the range that contains it. */
  addresses?: readonly string[];
  podRef?: string;
  podUid?: string;
  policy?: AllocationPolicy;
  /** A sticky network: keep seconds (DESIGN.md, "Sticky addresses"). */
  sticky?: number;
}

export interface Assigned {
  pool: PoolRef;
  range: Range;
  address: Ip;
  reservation: Reservation;
  reused: boolean;
}

export interface ReleaseInput {
  network?: string;
  ranges: readonly Range[];
  key: AttachmentKey;
  /** A sticky network: a sticky reservation is kept for its pod, not freed (DESIGN.md, "Sticky addresses"). */
  sticky?: boolean;
}

export interface Released {
  pool: PoolRef;
  address: Ip;
  reservation: Reservation;
}

/** The compare-and-swap layer over a store: reads, applies the pure allocator, writes with CAS, retries on conflict. */
export interface Ipam {
  allocate(input: AllocateInput): Promise<Assigned[]>;
  /** Releases exactly this key in every range (ranges holding nothing are fine). */
  release(input: ReleaseInput): Promise<Released[]>;
  /** Releases `expected` only if unchanged since observed (for reconcilers). */
  releaseIf(pool: PoolRef, expected: Reservation): Promise<ConditionalReleaseOutcome>;
  /**
   * `releaseIf` for several reservations of one pool, in conditional writes of up to
   * {@link RELEASES_PER_WRITE} each (reconcilers). One outcome each, in order.
   */
  releaseAllIf(pool: PoolRef, expected: readonly Reservation[]): Promise<ConditionalReleaseOutcome[]>;
  /** The reservation of this key in each range (undefined where none). */
  lookup(input: ReleaseInput): Promise<(Assigned | undefined)[]>;
  readonly conflicts: ConflictCounter;
}

const MAX_PROBES = 1024;

/**
 * Releases per conditional write in `releaseAllIf`. An entry-level release may cost a store
 * several operations and compares in one transaction (one per row it touches, and the claim),
 * and transactions are bounded (128 operations is a common limit); 20 keeps far below it.
 */
export const RELEASES_PER_WRITE = 20;

/** After a lost race on an entry-level store, choose among this many free addresses. */
const SPREAD = 128;

export function createIpam(options: IpamOptions): Ipam {
  const store = options.cache === undefined ? options.store : options.cache.watch(options.store);
  const protect = options.overlappingRanges ?? true;
  const counter = options.retry?.counter ?? { conflicts: 0 };
  const retry: RetryOptions = { ...options.retry, counter };
  const now = options.now ?? (() => new Date());
  const { entryWrites, transactions } = store.capabilities;

  const refFor = (network: string | undefined, range: Range): PoolRef => ({ network: network ?? "", cidr: range.cidr.text });

  async function allocateOne(ref: PoolRef, range: Range, input: AllocateInput, address: string | undefined): Promise<Assigned> {
    // claims this call wrote whose pool write lost a race: made to match the pool before it answers
    const owed = protect && !transactions ? new OwedClaims(store, ref) : undefined;
    try {
      return await probeAndWrite(ref, range, input, address, owed);
    } finally {
      await owed?.settle(retry).catch(() => undefined);
    }
  }

  async function probeAndWrite(
    ref: PoolRef,
    range: Range,
    input: AllocateInput,
    address: string | undefined,
    owed: OwedClaims | undefined,
  ): Promise<Assigned> {
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
          policy: input.policy ?? options.policy ?? "lowest-free",
          podRef: input.podRef,
          podUid: input.podUid,
          now: now().toISOString(),
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
        if (result.rebound !== undefined && !(await writeRebound(ref, result, stored?.version, input, owed))) {
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
          ? await reserveEntry(ref, result.reservation, result.pool.lastOffset, protect ? { claimRef, claim } : undefined, attempt)
          : !transactions
            ? await claimThenWrite(store, { claimRef, claim, ref, pool: result.pool, expected: stored?.version }, owed)
            : await claimAndWriteAtomically({
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
    }, retry);
  }

  /**
   * Sticky: writes a pool in which a reservation was rebound (compare-and-swapped on the whole
   * pool, entry-level stores too), its claim rewritten to name the new key with the pool where the
   * key changed. False when another pool holds the claim (never taken over).
   */
  async function writeRebound(
    ref: PoolRef,
    result: Allocation,
    expected: Version | undefined,
    input: AllocateInput,
    owed: OwedClaims | undefined,
  ): Promise<boolean> {
    const rebound = result.rebound as Reservation;
    if (!protect || sameKey(rebound.key, input.key)) {
      await store.writePool(ref, result.pool, expected);
      return true;
    }
    const claimRef = claimRefFor(ref, result.reservation.offset);
    const claim = { pool: ref, key: input.key, ...(input.podRef === undefined ? {} : { podRef: input.podRef }) };
    if (!transactions) {
      return (await claimThenWrite(store, { claimRef, claim, ref, pool: result.pool, expected }, owed)) === undefined;
    }
    return (await claimAndWriteAtomically({ claimRef, claim, ref, pool: result.pool, expected })) === undefined;
  }

  /** Stores with transactions: the claim and the pool in one commit. Returns the holder when taken. */
  async function claimAndWriteAtomically({ claimRef, claim, ref, pool, expected }: ClaimedWrite): Promise<Claim | undefined> {
    const plan = await planClaim(store, claimRef, claim);
    if (plan.kind === "taken") return plan.by;
    await store.commit([{ kind: "pool", ref, pool, expected }, ...plan.writes]);
    return undefined;
  }

  /** Entry-level stores: reserve one address (and claim it) in one commit; conflicts only on that address or key. */
  async function reserveEntry(
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

  /**
   * The one release path. `decide` picks what to release from the pool as read (by exact key, or
   * only what is unchanged). Each claim's version is read *before* the pool write and the claim
   * deleted at that version — in the same commit where the store can, else right after (DESIGN.md).
   */
  async function releaseWhere(ref: PoolRef, decide: (pool: Pool) => ReleaseDecision): Promise<ReleaseDecision> {
    /** The claims of a pool write of unknown outcome (separate writes): still to drop if it landed. */
    let unsure: UnsureRelease | undefined;
    const done = await withConflictRetry(async (_attempt, { afterUnknown }): Promise<ReleaseDecision & { dropLater?: LaterDrop[] }> => {
      if (!afterUnknown) unsure = undefined;
      const stored = await store.readPool(ref);
      if (stored === undefined) return landed(decide(Pool.empty(parseCidr(ref.cidr))), unsure, undefined);
      const decision = decide(stored.pool);
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

  async function releaseOne(ref: PoolRef, range: Range, key: AttachmentKey, sticky = false): Promise<Released | undefined> {
    const { released } = await releaseWhere(ref, (pool) => {
      const result = release(pool, key, sticky ? { keepAt: now().toISOString() } : {});
      if (result.kept !== undefined) return { pool: result.pool, released: [], outcomes: ["released"], kept: 1 };
      return result.released === undefined
        ? { pool, released: [], outcomes: ["absent"] }
        : { pool: result.pool, released: [result.released], outcomes: ["released"] };
    });
    const [reservation] = released;
    return reservation === undefined ? undefined : { pool: ref, address: ipAt(range.cidr, reservation.offset), reservation };
  }

  /** Takes every still-unchanged reservation of `expected` out of the pool (one write). */
  function releaseUnchanged(expected: readonly Reservation[]): (pool: Pool) => ReleaseDecision {
    return (pool) => {
      const decision: ReleaseDecision = { pool, released: [], outcomes: [], kept: 0 };
      const keepAt = now().toISOString();
      for (const reservation of expected) {
        const result = releaseIf(decision.pool, reservation, { keepAt });
        decision.pool = result.pool;
        decision.outcomes.push(result.outcome);
        if (result.released !== undefined) decision.released.push(result.released);
        if (result.kept !== undefined) decision.kept = (decision.kept ?? 0) + 1;
      }
      return decision;
    };
  }

  function placeStatics(ranges: readonly Range[], addresses: readonly string[] | undefined): (string | undefined)[] {
    const placed: (string | undefined)[] = ranges.map(() => undefined);
    for (const text of addresses ?? []) {
      const ip = parseIp(text);
      const index = ranges.findIndex((r, i) => placed[i] === undefined && cidrContains(r.cidr, ip));
      if (index < 0) throw new InvalidRequestError(`requested address ${text} is in none of the configured ranges (or twice in one)`);
      placed[index] = formatIp(ip);
    }
    return placed;
  }

  const exclusive: Exclusive = options.exclusive ?? ((fn) => fn());

  /** Every range, all-or-nothing: on failure, undo what this call reserved (by exact key), then report the first error. */
  async function allocateAll(input: AllocateInput, statics: readonly (string | undefined)[]): Promise<Assigned[]> {
    const done: Assigned[] = [];
    try {
      for (const [i, range] of input.ranges.entries()) {
        done.push(await allocateOne(refFor(input.network, range), range, input, statics[i]));
      }
      return done;
    } catch (error) {
      for (const a of done.filter((d) => !d.reused)) {
        await releaseOne(a.pool, a.range, input.key, input.sticky !== undefined).catch(() => undefined);
      }
      throw error;
    }
  }

  return {
    conflicts: counter,
    async allocate(input) {
      if (input.ranges.length === 0) throw new InvalidRequestError("no ranges to allocate from");
      const statics = placeStatics(input.ranges, input.addresses);
      return exclusive(() => allocateAll(input, statics));
    },
    async release(input) {
      const out: Released[] = [];
      const errors: unknown[] = [];
      for (const range of input.ranges) {
        try {
          const r = await releaseOne(refFor(input.network, range), range, input.key, input.sticky === true);
          if (r !== undefined) out.push(r);
        } catch (error) {
          errors.push(error);
        }
      }
      if (errors.length > 0) throw errors[0];
      return out;
    },
    async releaseIf(ref, expected) {
      const [outcome] = (await releaseWhere(ref, releaseUnchanged([expected]))).outcomes;
      return outcome ?? "absent";
    },
    async releaseAllIf(ref, expected) {
      const outcomes: ConditionalReleaseOutcome[] = [];
      for (let i = 0; i < expected.length; i += RELEASES_PER_WRITE) {
        outcomes.push(...(await releaseWhere(ref, releaseUnchanged(expected.slice(i, i + RELEASES_PER_WRITE)))).outcomes);
      }
      return outcomes;
    },
    async lookup(input) {
      return Promise.all(
        input.ranges.map(async (range) => {
          const ref = refFor(input.network, range);
          const stored = await store.readPool(ref);
          const reservation = stored?.pool.forKey(input.key);
          if (reservation === undefined || reservation.releasedAt !== undefined) return undefined; // kept: held by no attachment
          return { pool: ref, range, address: ipAt(range.cidr, reservation.offset), reservation, reused: true };
        }),
      );
    },
  };
}
