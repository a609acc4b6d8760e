import { describe, expect, it } from "vitest";
import { StoreConflictError, StoreUnavailableError } from "./errors.js";
import { withConflictRetry } from "./retry.js";

const fakeTime = () => {
  let t = 0;
  const sleeps: number[] = [];
  const sleep = async (ms: number) => {
    sleeps.push(ms);
    t += ms;
  };
  return { now: () => t, sleep, sleeps };
};

describe("withConflictRetry", () => {
  it("retries conflicts with jittered exponential backoff and counts them", async () => {
    const time = fakeTime();
    const counter = { conflicts: 0 };
    let calls = 0;
    const out = await withConflictRetry(
      async () => {
        calls += 1;
        if (calls < 4) throw new StoreConflictError("pool");
        return "ok";
      },
      { ...time, counter, random: () => 0.5, baseDelayMs: 10, maxDelayMs: 25 },
    );
    expect(out).toBe("ok");
    expect(counter.conflicts).toBe(3);
    expect(time.sleeps).toEqual([5, 10, 12.5]);
  });
  it("returns any other error at once", async () => {
    let calls = 0;
    await expect(
      withConflictRetry(async () => {
        calls += 1;
        throw new StoreUnavailableError("down");
      }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(calls).toBe(1);
  });
  it("gives up after the attempt bound with a retryable conflict carrying the count", async () => {
    const time = fakeTime();
    const error = await withConflictRetry(
      async () => {
        throw new StoreConflictError("pool");
      },
      { ...time, attempts: 5 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreConflictError);
    expect((error as StoreConflictError).retryable).toBe(true);
    expect((error as Error).message).toContain("after 5 attempts");
  });
  it("gives up at the deadline", async () => {
    const time = fakeTime();
    let calls = 0;
    await expect(
      withConflictRetry(
        async () => {
          calls += 1;
          throw new StoreConflictError("pool");
        },
        { ...time, random: () => 1, baseDelayMs: 100, maxDelayMs: 100, deadlineMs: 350, attempts: 1000 },
      ),
    ).rejects.toBeInstanceOf(StoreConflictError);
    expect(calls).toBe(4);
  });

  it("runs the attempt again after a write of unknown outcome, telling it so, and counts it apart from conflicts", async () => {
    const time = fakeTime();
    const counter = { conflicts: 0 };
    const told: boolean[] = [];
    const out = await withConflictRetry(
      async (n, { afterUnknown }) => {
        told.push(afterUnknown);
        if (n === 1) throw new StoreUnavailableError("reset after sending", { outcomeUnknown: true });
        if (n === 2) throw new StoreConflictError("pool");
        return "found out";
      },
      { ...time, counter },
    );
    expect(out).toBe("found out");
    expect(told).toEqual([false, true, false]);
    expect(counter).toEqual({ conflicts: 1, unknownOutcomes: 1 });
  });
  it("answers the unknown outcome itself (not a conflict) once unknownOutcomes are spent; a plain unavailable store at once", async () => {
    const time = fakeTime();
    let calls = 0;
    const unknown = new StoreUnavailableError("reset", { outcomeUnknown: true });
    const error = await withConflictRetry(
      async () => {
        calls += 1;
        throw unknown;
      },
      { ...time, unknownOutcomes: 3 },
    ).catch((e: unknown) => e);
    expect(error).toBe(unknown);
    expect(calls).toBe(4);
    calls = 0;
    const down = new StoreUnavailableError("connection refused");
    await expect(
      withConflictRetry(async () => {
        calls += 1;
        throw down;
      }, time),
    ).rejects.toBe(down);
    expect(calls).toBe(1);
  });
});
