import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { protocolBreaks, resetProtocolBreaks } from "./protocol-breaks.js";
import { type RandomRun, randomRun } from "./protocol-link.random.fixtures.js";
import type { Setup } from "./protocol-link.world.fixtures.js";

/**
 * The real code (per-node blocks, the plain pool's direct writer, sticky addresses, the
 * reconciler's pass and claim audit) in the protocol model's world, its store requests run in
 * random orders with crashes and writes of unknown outcome — more of them than the model has —
 * and the model's invariants checked after every request (protocol-link.run.fixtures.ts). Each
 * broken variant of the model, switched into the code, makes it fail.
 */

const FULL = process.env.RELIABILITY === "full";

const script = fc.constantFrom<RandomRun["scripts"][number]>(
  ["add"],
  ["add", "del"],
  ["add", "del kept", "add"],
  ["add", "del kept", "add", "del"],
);

const config = fc.record({
  mode: fc.constantFrom<Setup["mode"]>("two-nodes", "same-node", "overlap", "same-key", "sticky"),
  alone: fc.boolean(),
  reborn: fc.boolean(),
  one: script,
  two: script,
  passes: fc.nat(2),
  unknown: fc.nat(3),
  crasher: fc.nat(3),
  allocators: fc.integer({ min: 1, max: 3 }),
  reconciler: fc.integer({ min: 1, max: 3 }),
});

type Config = typeof config extends fc.Arbitrary<infer T> ? T : never;

/** A DEL whose pod stays, then an ADD again, is not a runtime's while the attachment's other call runs (the model's READD neither). */
const noKeep = (s: RandomRun["scripts"][number]) => s.slice(0, 2).map((x) => (x === "del kept" ? "del" : x));

function runOf(c: Config, broken?: RandomRun["broken"]): RandomRun {
  const sameKey = c.mode === "same-key";
  const reborn = c.reborn && !sameKey;
  return {
    setup: { mode: c.mode, alone: c.alone && !sameKey, podOf: reborn ? { 1: 1, 2: 1, 3: 3 } : { 1: 1, 2: 2, 3: 3 } },
    tries: { allocators: c.allocators, reconciler: c.reconciler },
    scripts: sameKey ? { 1: noKeep(c.one), 2: noKeep(c.two) } : { 1: c.one, 2: c.two },
    passes: c.passes,
    unknown: c.unknown,
    crasher: c.crasher,
    ...(broken === undefined ? {} : { broken }),
  };
}

const schedule = fc.array(fc.nat(1_000), { minLength: 50, maxLength: 400 });

describe("the code in the protocol model's world, random schedules", () => {
  afterEach(() => resetProtocolBreaks());

  it("keeps the model's invariants after every request: crashes, conflicts, writes of unknown outcome, sticky", {
    timeout: FULL ? 3_600_000 : 120_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(config, schedule, async (c, choices) => {
        await randomRun(runOf(c), choices);
      }),
      { numRuns: FULL ? 30_000 : 300 },
    );
  });

  const BROKEN: [string, keyof typeof protocolBreaks | RandomRun["broken"]][] = [
    ["BROKEN_BLIND: pool writes ignore the version", { blind: true }],
    ["BROKEN_NOFENCE: a dangling claim taken over without fencing its pool", "noFence"],
    ["BROKEN_NOTOUCH: an ADD's choice of block not fenced", "noTouch"],
    ["BROKEN_STALE: a release retried with its first decision", "staleDecision"],
    ["BROKEN_REPAIR: a claim repaired without fencing the pool it names", "repairNoFence"],
    ["BROKEN_DELNOVER: a DEL deletes its claim whatever its version", { delNoVersion: true }],
    ["BROKEN_PODREF: a conditional release by pod name", "releaseByPodName"],
    ["BROKEN_PODSFIRST: the pods as they were before the pools were read", { podsFirst: true }],
  ];
  for (const [name, broken] of BROKEN) {
    it(`fails with ${name}`, { timeout: 120_000 }, async () => {
      if (typeof broken === "string") protocolBreaks[broken] = true;
      const found = await fc.check(
        fc.asyncProperty(config, schedule, async (c, choices) => {
          await randomRun(runOf(c, typeof broken === "string" ? undefined : broken), choices);
        }),
        { numRuns: 20_000, endOnFailure: true, seed: 20_261_207 },
      );
      expect(found.failed, `no schedule in ${found.numRuns} broke an invariant`).toBe(true);
      expect(String(found.errorInstance)).toMatch(/InvariantViolation/);
    });
  }
});
