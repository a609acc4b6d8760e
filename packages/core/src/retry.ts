import { isOutcomeUnknown, StoreConflictError } from "./errors.js";

export interface RetryOptions {
  /** Maximum attempts, first one included. Default 64. */
  attempts?: number;
  /** First backoff ceiling in ms; doubles per conflict. Default 2. */
  baseDelayMs?: number;
  /** Largest backoff ceiling in ms. Default 250. */
  maxDelayMs?: number;
  /** Give up when this much time has passed since the first attempt (ms). Default 10 000. */
  deadlineMs?: number;
  /**
   * Attempts run again after a write of unknown outcome, at most (each reads the store again). An
   * attempt whose re-read fails answers that failure. Default 8.
   */
  unknownOutcomes?: number;
  /** Counter incremented on every conflict (share one across calls to count a workload's conflicts). */
  counter?: ConflictCounter;
  /** Injected for tests. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface ConflictCounter {
  conflicts: number;
  /** Writes of unknown outcome met (and found out by running the attempt again), when counted. */
  unknownOutcomes?: number;
}

/** What an attempt is told about the one before it. */
export interface AttemptContext {
  /**
   * The previous attempt ended in a write of unknown outcome: what it wrote may be in the store.
   * The attempt's own reads show whether it is (and its compare-and-swap writes that it cannot
   * land twice); an attempt that keeps state across attempts (claims to drop) consults this.
   */
  readonly afterUnknown: boolean;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The one conflict-retry loop of ipamkit. Runs `attempt` (which must re-read whatever it writes);
 * on StoreConflictError waits a jittered exponential backoff ("full jitter") and runs it again,
 * up to `attempts` times and until the deadline.
 *
 * A write of unknown outcome (StoreUnavailableError with `outcomeUnknown`: sent, no answer — a
 * reset connection, a timeout, a resend refused as stale) is resolved here too, never passed on:
 * every write of an attempt is a compare-and-swap, and every operation is idempotent by its key,
 * so the attempt is simply run again (told so: `afterUnknown`). Its reads decide — the key's
 * reservation is there (the write landed: the same answer) or not (it did not, or can no longer:
 * its compare-and-swap fails once anything moved the version on), the claim is ours or not.
 * Up to `unknownOutcomes` times; an attempt whose re-read fails answers that failure.
 *
 * Any other error is returned at once. When attempts or time run out, throws a StoreConflictError
 * carrying the attempt count (retryable), or the last unknown outcome.
 */
export async function withConflictRetry<T>(
  attempt: (n: number, context: AttemptContext) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 64;
  const base = options.baseDelayMs ?? 2;
  const max = options.maxDelayMs ?? 250;
  const deadlineMs = options.deadlineMs ?? 10_000;
  const unknownLimit = options.unknownOutcomes ?? 8;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const started = now();
  let unknowns = 0;
  let afterUnknown = false;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n, { afterUnknown });
    } catch (error) {
      afterUnknown = isOutcomeUnknown(error);
      if (!afterUnknown && !(error instanceof StoreConflictError)) throw error;
      const counter = options.counter;
      if (afterUnknown) {
        unknowns += 1;
        if (counter !== undefined) counter.unknownOutcomes = (counter.unknownOutcomes ?? 0) + 1;
      } else if (counter !== undefined) counter.conflicts += 1;
      const ceiling = Math.min(max, base * 2 ** (n - 1));
      const delay = random() * ceiling;
      const exhausted = n >= attempts || now() - started + delay > deadlineMs;
      if (afterUnknown && (exhausted || unknowns > unknownLimit)) throw error;
      if (exhausted) throw new StoreConflictError((error as StoreConflictError).object, { attempts: n, cause: error });
      await sleep(delay);
    }
  }
}
