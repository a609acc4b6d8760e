import type { AllocationPolicy, ConditionalReleaseOutcome } from "./allocator.js";
import { InvalidRequestError } from "./errors.js";
import type { Ip } from "./ip.js";
import { allocateAll, placeStatics } from "./ipam-allocate.js";
import type { IpamCache } from "./ipam-cache.js";
import type { IpamContext } from "./ipam-context.js";
import { lookupEach } from "./ipam-lookup.js";
import { releaseEach, releaseUnchanged, releaseWhere } from "./ipam-release.js";
import type { AttachmentKey } from "./key.js";
import type { Range } from "./range.js";
import type { Reservation } from "./reservation.js";
import type { ConflictCounter, RetryOptions } from "./retry.js";
import type { IpamStore, PoolRef } from "./store.js";

export interface IpamOptions {
  store: IpamStore;
  /**
   * What this process remembers of the store (a long-lived process: the agent), kept across calls;
   * the allocator applies it to `store` itself. createIpam uses its claim memories; per-node blocks
   * also teach it every pool they read or write, and recall from it (see IpamCache).
   */
  cache?: IpamCache;
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
  /**
   * Whereabouts' node slices: each range is this node's slice of a configured range (`sliceRange`),
   * allocated in that node's pool of it (`PoolRef.node`). Absent: each range's own pool.
   */
  node?: string;
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
  /** As in {@link AllocateInput.node}. */
  node?: string;
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

/**
 * Releases per conditional write in `releaseAllIf`. An entry-level release may cost a store
 * several operations and compares in one transaction (one per row it touches, and the claim),
 * and transactions are bounded (128 operations is a common limit); 20 keeps far below it.
 */
export const RELEASES_PER_WRITE = 20;

/**
 * Builds the shared context once; the paths live beside it: allocation in `ipam-allocate.ts`
 * (its store writes in `ipam-write.ts`), release in `ipam-release.ts`, lookup in `ipam-lookup.ts`.
 */
export function createIpam(options: IpamOptions): Ipam {
  const store = options.cache === undefined ? options.store : options.cache.watchClaims(options.store);
  const counter = options.retry?.counter ?? { conflicts: 0 };
  const { entryWrites, transactions } = store.capabilities;
  const ctx: IpamContext = {
    store,
    protect: options.overlappingRanges ?? true,
    retry: { ...options.retry, counter },
    now: options.now ?? (() => new Date()),
    policy: options.policy,
    entryWrites,
    transactions,
  };
  const exclusive: Exclusive = options.exclusive ?? ((fn) => fn());

  return {
    conflicts: counter,
    async allocate(input) {
      if (input.ranges.length === 0) throw new InvalidRequestError("no ranges to allocate from");
      const statics = placeStatics(input.ranges, input.addresses);
      return exclusive(() => allocateAll(ctx, input, statics));
    },
    async release(input) {
      return releaseEach(ctx, input);
    },
    async releaseIf(ref, expected) {
      const [outcome] = (await releaseWhere(ctx, ref, releaseUnchanged(ctx, [expected]))).outcomes;
      return outcome ?? "absent";
    },
    async releaseAllIf(ref, expected) {
      const outcomes: ConditionalReleaseOutcome[] = [];
      for (let i = 0; i < expected.length; i += RELEASES_PER_WRITE) {
        outcomes.push(...(await releaseWhere(ctx, ref, releaseUnchanged(ctx, expected.slice(i, i + RELEASES_PER_WRITE)))).outcomes);
      }
      return outcomes;
    },
    async lookup(input) {
      return lookupEach(ctx, input);
    },
  };
}
