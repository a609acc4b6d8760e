import { StoreConflictError } from "./errors.js";

export interface RetryOptions {
  /** Maximum attempts, first one included. Default 64. */
  attempts?: number;
  /** First backoff ceiling in ms; doubles per conflict. Default 2. */
  baseDelayMs?: number;
  /** Largest backoff ceiling in ms. Default 250. */
  maxDelayMs?: number;
  /** Give up when this much time has passed since the first attempt (ms). Default 10 000. */
  deadlineMs?: number;
  /** Counter incremented on every conflict (share one across calls to count a workload's conflicts). */
  counter?: ConflictCounter;
  /** Injected for tests. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface ConflictCounter {
  conflicts: number;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The one conflict-retry loop of ipamkit. Runs `attempt` (which must re-read whatever it writes);
 * on StoreConflictError waits a jittered exponential backoff ("full jitter") and runs it again,
 * up to `attempts` times and until the deadline. Any other error is returned at once.
 * When attempts or time run out, throws a StoreConflictError carrying the attempt count (retryable).
 */
export async function withConflictRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 64;
  const base = options.baseDelayMs ?? 2;
  const max = options.maxDelayMs ?? 250;
  const deadlineMs = options.deadlineMs ?? 10_000;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const started = now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
      if (options.counter !== undefined) options.counter.conflicts += 1;
      const ceiling = Math.min(max, base * 2 ** (n - 1));
      const delay = random() * ceiling;
      if (n >= attempts || now() - started + delay > deadlineMs) {
        throw new StoreConflictError(error.object, { attempts: n, cause: error });
      }
      await sleep(delay);
    }
  }
}
