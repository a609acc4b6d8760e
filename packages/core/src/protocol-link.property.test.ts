import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { protocolBreaks, resetProtocolBreaks } from "./protocol-breaks.js";
import { type RandomRun, randomRun } from "./protocol-link.random.fixtures.js";
import type { Tally } from "./protocol-link.run.fixtures.js";
import type { Setup } from "./protocol-link.world.fixtures.js";

/**
 * The real code (per-node blocks, the plain pool's direct writer, sticky addresses, the
 * reconciler's pass and claim audit) in the protocol model's world, its store requests run in
 * random orders with a crash and writes of unknown outcome — more of them than the model has —
 * and the model's invariants checked after every request (protocol-link.run.fixtures.ts), with
 * the rules of sticky addresses (protocol-link.writes.fixtures.ts). Each broken variant of the
 * model, and each sticky bug, switched into the code, makes it fail, each with its own finding.
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
  caches: fc.boolean(),
  batchReads: fc.boolean(),
});

type Config = typeof config extends fc.Arbitrary<infer T> ? T : never;

/** Two direct writers of the plain pool on a sticky network (the model has no sticky: the link's own setup). */
const stickyConfig = config.map((c): Config => ({ ...c, mode: "sticky", alone: false }));

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
    caches: c.caches,
    batchReads: c.batchReads,
    ...(broken === undefined ? {} : { broken }),
  };
}

const schedule = fc.array(fc.nat(1_000), { minLength: 50, maxLength: 400 });

describe("the code in the protocol model's world, random schedules", () => {
  afterEach(() => resetProtocolBreaks());

  /** Runs `numRuns` schedules of `configs`; what they did, added up. */
  async function tallied(configs: fc.Arbitrary<Config>, numRuns: number): Promise<Tally> {
    const total: Tally = { requests: 0, unknown: 0, crashes: 0, answered: 0, failed: 0, kept: 0, heldAgain: 0, rebound: 0, expired: 0 };
    await fc.assert(
      fc.asyncProperty(configs, schedule, async (c, choices) => {
        const tally = await randomRun(runOf(c), choices);
        for (const k of Object.keys(total) as (keyof Tally)[]) total[k] += tally[k];
      }),
      { numRuns },
    );
    return total;
  }

  it("keeps the model's invariants after every request: crashes, conflicts, writes of unknown outcome, sticky", {
    timeout: FULL ? 3_600_000 : 120_000,
  }, async () => {
    const total = await tallied(config, FULL ? 30_000 : 300);
    console.log(`random schedules: ${JSON.stringify(total)}`);
    // what the checks judge was reached (a check never reached cannot fail); sticky's rarer steps: below
    for (const k of ["unknown", "crashes", "answered", "failed", "kept", "heldAgain"] as const)
      expect(total[k], `no run reached: ${k}`).toBeGreaterThan(0);
  });

  it("sticky addresses: kept at DEL, held again, rebound to the reborn pod, freed once expired — by the rules", {
    timeout: FULL ? 3_600_000 : 120_000,
  }, async () => {
    const total = await tallied(stickyConfig, FULL ? 10_000 : 150);
    console.log(`sticky schedules: ${JSON.stringify(total)}`);
    for (const k of ["kept", "heldAgain", "rebound", "expired"] as const) expect(total[k], `no run reached: ${k}`).toBeGreaterThan(0);
  });

  /**
   * Each bug, what the code with it must break (the model's variants: any of the model's
   * invariants, as schedules differ; the progress and sticky bugs: the check made for them), and
   * (sticky's) the schedules that look for it.
   */
  const ANY = /InvariantViolation/;
  const BROKEN: [string, keyof typeof protocolBreaks | RandomRun["broken"], RegExp, fc.Arbitrary<Config>?][] = [
    ["BROKEN_BLIND: pool writes ignore the version", { blind: true }, ANY],
    ["BROKEN_NOFENCE: a dangling claim taken over without fencing its pool", "noFence", ANY],
    ["BROKEN_NOTOUCH: an ADD's choice of block not fenced", "noTouch", ANY],
    ["BROKEN_STALE: a release retried with its first decision", "staleDecision", ANY],
    ["BROKEN_REPAIR: a claim repaired without fencing the pool it names", "repairNoFence", ANY],
    ["BROKEN_DELNOVER: a DEL deletes its claim whatever its version", { delNoVersion: true }, ANY],
    ["BROKEN_PODREF: a conditional release by pod name", "releaseByPodName", ANY],
    ["BROKEN_PODSFIRST: the pods as they were before the pools were read", { podsFirst: true }, ANY],
    [
      "BROKEN_GIVEUP: an ADD that claimed a block answers exhausted",
      "giveUpAfterClaim",
      /ADD failed .* with no other writer since it began/,
    ],
    ["a reborn pod's ADD never rebinds its kept address", "stickyNoRebind", /left its pod's address a\d .* behind/, stickyConfig],
    ["an ADD rebinds another pod's kept address", "stickyAnyPod", /took key \d's entry at a\d of pool 3 over/, stickyConfig],
    ["a kept address judged expired at once", "stickyExpireAtOnce", /before its keep time ran out/, stickyConfig],
    ["a DEL on a sticky network frees the address", "stickyFreeAtDel", /sticky, at its DEL/, stickyConfig],
  ];
  for (const [name, broken, finding, configs = config] of BROKEN) {
    it(`fails with ${name}`, { timeout: 120_000 }, async () => {
      if (typeof broken === "string") protocolBreaks[broken] = true;
      const found = await fc.check(
        fc.asyncProperty(configs, schedule, async (c, choices) => {
          await randomRun(runOf(c, typeof broken === "string" ? undefined : broken), choices);
        }),
        { numRuns: 20_000, endOnFailure: true, seed: 20_261_207 },
      );
      expect(found.failed, `no schedule in ${found.numRuns} broke an invariant`).toBe(true);
      console.log(`${name}: found after ${found.numRuns} schedules: ${String(found.errorInstance).split("\n")[0]}`);
      expect(String(found.errorInstance)).toMatch(/InvariantViolation/);
      expect(String(found.errorInstance)).toMatch(finding);
      // the bug broke it: the correct code runs that very schedule without a violation
      resetProtocolBreaks();
      const [c, choices] = found.counterexample ?? [];
      if (c === undefined || choices === undefined) throw new Error("fast-check gave no counterexample");
      await randomRun(runOf(c), choices);
    });
  }
});
