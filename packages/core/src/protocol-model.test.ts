import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { protocolBreaks, resetProtocolBreaks } from "./protocol-breaks.js";
import { parseModelRun, replayModelRun } from "./protocol-link.replay.fixtures.js";
import { InvariantViolation } from "./protocol-link.run.fixtures.js";
import { checkModel, DEPTH, MODEL } from "./protocol-spin.fixtures.js";

/**
 * The allocation protocol's Promela model (model/ipam.pml), checked exhaustively by spin: every
 * interleaving of two allocators and the reconciler, a crash at any step, a write of unknown
 * outcome (DESIGN.md, "Protocol model"). `npm test` checks the configurations below; RELIABILITY=full
 * the bigger ones too. Each broken variant must yield a counterexample in one of the configurations
 * CI checks, and that counterexample, replayed against the real code with the same bug switched
 * in, must break the same invariant there (protocol-link.*.fixtures.ts).
 */

const root = fileURLToPath(new URL("../../..", import.meta.url));
const DESIGN = join(root, "packages/core/DESIGN.md");
const FULL = process.env.RELIABILITY === "full";

interface Check {
  name: string;
  defines: string[];
  /** States stored at least: the model still explores what it did when this was measured (about 60 % of it). */
  floor: number;
  /** Also in `npm test` (else only with RELIABILITY=full). */
  ci: boolean;
}

/** FENCE_ALL: the allocators fence their choice as the code does on every store (replayable against the code). */
const CHECKS: Check[] = [
  {
    name: "all three configurations, fenced: both allocators may DEL, then the reconciler",
    defines: ["-DFENCE_ALL", "-DCRASH=0", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 2_600_000,
    ci: true,
  },
  {
    name: "the agent alone, fenced: a crash anywhere, a concurrent reconciler pass, its DEL",
    defines: ["-DALONE", "-DSAME_NODE", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=1"],
    floor: 160_000,
    ci: true,
  },
  {
    name: "key 2's pod is key 1's reborn (same name), fenced: a crash anywhere, then the reconciler",
    defines: ["-DREBORN", "-DSAME_NODE", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=0"],
    floor: 40_000,
    ci: true,
  },
  {
    name: "the agent alone, fenced: a write of unknown outcome, ADD, DEL and ADD again, a concurrent reconciler pass",
    defines: ["-DALONE", "-DSAME_NODE", "-DREADD", "-DUNKNOWN=1", "-DFENCE_ALL", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=1"],
    floor: 2_200_000,
    ci: true,
  },
  {
    name: "all three configurations: a crash anywhere, both allocators may DEL, then the reconciler",
    defines: ["-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 1_400_000,
    ci: true,
  },
  {
    name: "one attachment's two ADDs at once on one node, fenced: a crash anywhere, both DEL, then the reconciler",
    defines: ["-DSAME_KEY", "-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 4_600_000,
    ci: false,
  },
  {
    name: "one attachment's two ADDs at once, a concurrent reconciler pass freeing room in the node's full block, one attempt each",
    defines: ["-DSAME_KEY", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=0", "-DMAXTRY=1"],
    floor: 7_400_000,
    ci: true,
  },
  {
    name: "all three configurations, fenced: a crash anywhere, both allocators may DEL, then the reconciler",
    defines: ["-DFENCE_ALL", "-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 10_000_000,
    ci: false,
  },
  {
    name: "two nodes, or agent and direct mode on one node: a crash anywhere, a concurrent reconciler pass",
    defines: ["-DNO_OVERLAP", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=0"],
    floor: 22_000_000,
    ci: false,
  },
  {
    name: "the agent alone, fenced: a write of unknown outcome and a crash anywhere, ADD, DEL and ADD again, a concurrent pass",
    defines: ["-DALONE", "-DSAME_NODE", "-DREADD", "-DUNKNOWN=1", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=1"],
    floor: 9_000_000,
    ci: false,
  },
  {
    name: "all three configurations: a write of unknown outcome, both allocators may DEL, then the reconciler",
    defines: ["-DUNKNOWN=1", "-DCRASH=0", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 4_800_000,
    ci: false,
  },
  {
    name: "all three configurations, fenced, three attempts in every retry loop: both allocators may DEL, then the reconciler",
    defines: ["-DFENCE_ALL", "-DMAXTRY=3", "-DCRASH=0", "-DNPASS=0", "-DMAYDEL=2"],
    floor: 13_000_000,
    ci: false,
  },
  {
    name: "the agent beside a direct writer of the overlapping plain pool: a concurrent reconciler pass, one allocator DELs",
    defines: ["-DOVERLAP", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=1"],
    floor: 70_000_000,
    ci: false,
  },
];

const HOLDS = CHECKS.filter((c) => FULL || c.ci);

interface Broken {
  flag: string;
  name: string;
  /** The CI configuration (CHECKS) it is caught in. */
  config: string;
  /** The code's bug of the same kind (RunOptions' are switched in from the flag by the replay). */
  hook?: keyof typeof protocolBreaks;
  /** What the code with the bug breaks. */
  breaks: RegExp;
}

const BROKEN: Broken[] = [
  {
    flag: "BROKEN_BLIND",
    name: "pool writes ignore the version: a concurrent writer's entry dropped",
    config: CHECKS[0]?.name ?? "",
    breaks: /dropped key \d's entry|held twice|key \d at a\d .* and key/,
  },
  {
    flag: "BROKEN_NOFENCE",
    name: "a dangling claim taken over without fencing its pool: an address held twice",
    config: CHECKS[0]?.name ?? "",
    hook: "noFence",
    breaks: /has a claim naming pool|key \d at a\d of pool \d and key \d at a\d of pool \d/,
  },
  {
    flag: "BROKEN_DELNOVER",
    name: "a DEL deletes its claim whatever its version: a live answered entry without a claim",
    config: CHECKS[0]?.name ?? "",
    breaks: /answered a\d in pool \d has no claim/,
  },
  {
    flag: "BROKEN_STALE",
    name: "a release retried after a conflict keeps its first decision: a concurrent writer's entry dropped",
    config: CHECKS[0]?.name ?? "",
    hook: "staleDecision",
    breaks: /dropped key \d's entry/,
  },
  {
    flag: "BROKEN_PODSFIRST",
    name: "the pods as listed before the pools were read (Whereabouts#207): a live attachment's entry released",
    config: CHECKS[1]?.name ?? "",
    breaks: /@3 writePool \d dropped key \d's entry at a\d of pool \d \(a live attachment's\)/,
  },
  {
    flag: "BROKEN_REPAIR",
    name: "a claim repaired without fencing the pool it names: a live answered entry without a claim",
    config: CHECKS[1]?.name ?? "",
    hook: "repairNoFence",
    breaks: /answered a\d in pool \d has no claim/,
  },
  {
    flag: "BROKEN_PODREF",
    name: "the reconciler releases by pod name (Whereabouts#176): the reborn pod's live address released",
    config: CHECKS[2]?.name ?? "",
    hook: "releaseByPodName",
    breaks: /@3 writePool \d dropped key 2's entry at a\d of pool \d \(a live attachment's\)/,
  },
  {
    flag: "BROKEN_NOTOUCH",
    name: "one attachment's two ADDs, their choices not fenced: the key placed in two blocks",
    config: CHECKS[6]?.name ?? "",
    hook: "noTouch",
    breaks: /key 1 answered a\d in pool \d, having been answered a\d in pool \d|key 1 at a\d of pool \d and key 1/,
  },
  {
    flag: "BROKEN_GIVEUP",
    name: "an ADD that claimed a block answers exhausted: bounded progress broken, a free address and no other writer",
    config: CHECKS[0]?.name ?? "",
    hook: "giveUpAfterClaim",
    breaks: /ADD failed .* with no other writer since it began and a\d/,
  },
];

/**
 * CI's budget for finding a broken variant's counterexample: breadth-first (the shortest), within
 * this many states stored and BFS_MEMORY_MB; the test fails when a variant needs more (a model
 * change that makes a bug harder to find is noticed, not left to a state-count floor).
 */
const BFS_STATES = 1_000_000;
const BFS_MEMORY_MB = 4_000;

const TIMEOUT = FULL ? 3 * 3_600_000 : 240_000;
const configOf = (name: string) => CHECKS.find((c) => c.name === name) as Check;

describe("protocol model, checked exhaustively by spin", () => {
  for (const { name, defines, floor } of HOLDS) {
    it(`holds: ${name}`, { timeout: TIMEOUT }, () => {
      const run = checkModel(defines, { optimise: FULL ? "-O2" : "-O0" });
      console.log(
        `spin ${defines.join(" ")}: ${run.errors} errors, ${run.states} states, depth ${run.depth}, ${run.memoryMb} MB, ${run.seconds} s`,
      );
      expect(run.trail, run.trail).toBeUndefined();
      expect(run.errors, run.output).toBe(0);
      expect(run.truncated, run.output).toBe(false);
      expect(run.depth).toBeLessThan(DEPTH);
      expect(run.states).toBeGreaterThan(floor);
    });
  }
});

describe("a broken variant: a counterexample in a configuration CI checks, and the code with that bug fails on it", () => {
  afterEach(() => resetProtocolBreaks());

  for (const { flag, name, config, hook, breaks } of BROKEN) {
    it(`${flag}: ${name}`, { timeout: TIMEOUT }, async () => {
      const check = configOf(config);
      const defines = [`-D${flag}`, ...check.defines];
      // breadth first: the shortest counterexample, found long before the search would end
      const run = checkModel(defines, { breadthFirst: true, memoryMb: BFS_MEMORY_MB });
      console.log(`spin ${defines.join(" ")}: a counterexample after ${run.states} states, ${run.memoryMb} MB, ${run.seconds} s`);
      expect(run.errors, run.output).toBeGreaterThanOrEqual(1);
      expect(run.trail, "pan wrote no trail").toBeDefined();
      expect(run.states, "found, but beyond CI's budget").toBeLessThanOrEqual(BFS_STATES);
      const steps = parseModelRun(run.trail ?? "");

      // the code, with the bug in it, does what the trail does and breaks an invariant of the model
      if (hook !== undefined) protocolBreaks[hook] = true;
      const broken = await replayModelRun(steps, defines).then(
        () => undefined,
        (error: unknown) => error,
      );
      resetProtocolBreaks();
      expect(broken, "the code with the bug did all the trail does without breaking an invariant").toBeInstanceOf(InvariantViolation);
      expect(String(broken)).toMatch(breaks);

      // the correct code does not: it leaves the trail (or follows it without breaking anything)
      const correct = await replayModelRun(
        steps,
        defines.filter((d) => d !== `-D${flag}`),
      ).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(correct, String(correct)).not.toBeInstanceOf(InvariantViolation);
    });
  }
});

/** `| model steps | file | functions |` rows of DESIGN.md's "Protocol model" table, backticked names. */
function designTable(): { steps: string[]; file: string; functions: string[] }[] {
  const text = readFileSync(DESIGN, "utf8");
  const start = text.indexOf("\n## Protocol model");
  if (start < 0) throw new Error('DESIGN.md has no "## Protocol model" section');
  const end = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [steps = "", file = "", functions = ""] = line.split("|").slice(1);
      return { steps: names(steps), file: names(file)[0] ?? "", functions: names(functions) };
    });
}

/** A definition of `name` in TypeScript source: a function, const, class, or method/interface member. */
function defines(source: string, name: string): boolean {
  const n = name.replace(/[$]/g, "\\$");
  return new RegExp(
    `(?:function\\*?\\s+${n}\\s*[<(]|(?:const|let)\\s+${n}\\s*[:=]|(?:class|interface)\\s+${n}\\b|^[ \\t]*(?:(?:export|async|private|public|static)\\s+)*${n}\\??\\s*(?:<[^>\\n]*>)?\\()`,
    "m",
  ).test(source);
}

describe("DESIGN.md's protocol model table", () => {
  const rows = designTable();
  const model = readFileSync(MODEL, "utf8");

  it("maps model steps to code", () => {
    expect(rows.length).toBeGreaterThanOrEqual(10);
  });

  it("names only model steps that exist in model/ipam.pml", () => {
    const missing = rows.flatMap((r) =>
      r.steps.filter((step) => !new RegExp(`(?:inline|proctype)\\s+${step}\\s*\\(|^\\s*${step}:|#define\\s+${step}\\b`, "m").test(model)),
    );
    expect(missing).toEqual([]);
  });

  it("names only functions that exist in the files named", () => {
    const missing = rows.flatMap((r) => {
      const path = join(root, r.file);
      if (!existsSync(path)) return [`${r.file} (no such file)`];
      const source = readFileSync(path, "utf8");
      return r.functions.filter((f) => !defines(source, f)).map((f) => `${r.file}: ${f}`);
    });
    expect(missing).toEqual([]);
  });

  it("would notice a function that disappears", () => {
    expect(defines("export async function claimAddress(store) {}", "claimAddress")).toBe(true);
    expect(defines("  async judge(pool: Pool): Promise<void> {", "judge")).toBe(true);
    expect(defines("const x = claimAddress(store);", "claimAddress")).toBe(false);
  });
});
