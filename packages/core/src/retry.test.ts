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
});
