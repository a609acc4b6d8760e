import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The allocation protocol's Promela model (model/ipam.pml), checked exhaustively by spin: every
 * interleaving of two allocators and the reconciler, a crash at any step (DESIGN.md, "Protocol
 * model"). `npm test` checks bounded configurations; RELIABILITY=full the bigger ones. A broken
 * variant of each guarantee must yield a counterexample, so the harness is shown to catch it.
 */

const root = fileURLToPath(new URL("../../..", import.meta.url));
const MODEL = join(root, "packages/core/model/ipam.pml");
const DESIGN = join(root, "packages/core/DESIGN.md");
const FULL = process.env.RELIABILITY === "full";
/** pan's depth bound: far beyond the deepest path (~600 steps); a search cut short by it fails the test. */
const DEPTH = 100_000;

interface Check {
  name: string;
  defines: string[];
  /** States stored at least: the model still explores what it did when this was measured (about 60 % of it). */
  floor: number;
}

/**
 * The first three configurations (two nodes, agent beside direct mode, overlapping pool) in one run
 * unless one is named; SAME_KEY (one attachment's two ADDs at once) only when named.
 */
const HOLDS: Check[] = FULL
  ? [
      { name: "a crash anywhere, both DEL, then the reconciler", defines: ["-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"], floor: 700_000 },
      { name: "a crash anywhere, a concurrent reconciler pass", defines: ["-DCRASH=1", "-DNPASS=1", "-DMAYDEL=0"], floor: 15_000_000 },
      { name: "a concurrent reconciler pass, one allocator DELs", defines: ["-DCRASH=0", "-DNPASS=1", "-DMAYDEL=1"], floor: 16_000_000 },
      {
        name: "agent and direct mode on one node, everything at once: a crash anywhere, both DEL, a concurrent reconciler pass",
        defines: ["-DSAME_NODE", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2"],
        floor: 100_000_000,
      },
      {
        name: "one attachment's two ADDs at once, fenced, and a concurrent reconciler pass freeing room in the node's full block",
        defines: ["-DSAME_KEY", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=0", "-DMAXTRY=1"],
        floor: 40_000_000,
      },
    ]
  : [
      { name: "a crash anywhere, both DEL, then the reconciler", defines: ["-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"], floor: 1_000_000 },
      {
        name: "two nodes, or agent and direct mode on one node: a crash anywhere, a concurrent reconciler pass",
        defines: ["-DNO_OVERLAP", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=0"],
        floor: 5_500_000,
      },
      {
        name: "one attachment's two ADDs at once on one node, fenced: a crash anywhere, both DEL, then the reconciler",
        defines: ["-DSAME_KEY", "-DCRASH=1", "-DNPASS=0", "-DMAYDEL=2"],
        floor: 3_000_000,
      },
    ];

interface Broken {
  name: string;
  defines: string[];
  /** What the counterexample's replay must show (each). */
  shows: RegExp[];
}

const BROKEN: Broken[] = [
  {
    name: "the reconciler releases by pod name (Whereabouts#176): a reborn pod loses its live address",
    defines: ["-DBROKEN_PODREF", "-DSAME_NODE", "-DCRASH=1", "-DNPASS=0"],
    shows: [/MSC: reconciler released a\d \(key [12]\)/, /assertion violated/],
  },
  {
    name: "pool writes ignore the version: a concurrent reservation is overwritten",
    defines: ["-DBROKEN_BLIND", "-DCRASH=0", "-DNPASS=0"],
    shows: [/MSC: key \d reserved a(\d) in pool (\d)[\s\S]*MSC: key \d reserved a\1 in pool \2/, /assertion violated/],
  },
  {
    name: "a dangling claim taken over without fencing its pool: an address held twice",
    defines: ["-DBROKEN_NOFENCE", "-DOVERLAP", "-DCRASH=0", "-DNPASS=0"],
    shows: [
      /MSC: key \d reserved a(\d) in pool (?:3[\s\S]*MSC: key \d reserved a\1 in pool 1|1[\s\S]*MSC: key \d reserved a\1 in pool 3)/,
      /assertion violated/,
    ],
  },
  {
    name: "one attachment's two ADDs, their choices not fenced: the key placed in two blocks",
    defines: ["-DBROKEN_NOTOUCH", "-DSAME_KEY", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=0"],
    shows: [/MSC: key 1 reserved a\d in pool (\d)[\s\S]*MSC: key 1 reserved a\d in pool (?!\1)\d/, /assertion violated/],
  },
];

interface PanResult {
  errors: number;
  states: number;
  depth: number;
  memoryMb: number;
  seconds: number;
  /** The search stopped early: depth bound, memory bound or out of memory. */
  truncated: boolean;
  output: string;
  /** spin's replay of the counterexample, when pan wrote a trail. */
  trail?: string;
}

function tool(command: string, args: string[], cwd: string, what: string): string {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.error !== undefined) throw new Error(`${what}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${what} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** Fails with the install command when spin or gcc is missing. */
function requireTools(): void {
  for (const [command, args, pkg] of [
    ["spin", ["-V"], "spin"],
    ["gcc", ["--version"], "gcc"],
  ] as const) {
    const probe = spawnSync(command, args, { encoding: "utf8" });
    if (probe.error !== undefined || probe.status !== 0) throw new Error(`${command} is not installed: apt-get install -y ${pkg}`);
  }
}

const number = (text: string, pattern: RegExp): number => {
  const match = pattern.exec(text);
  return match === null ? Number.NaN : Number(match[1]);
};

/** spin -a, gcc, pan in a directory of its own (pan writes its files and the trail there). */
function check(defines: string[], optimise: "-O2" | "-O0"): PanResult {
  requireTools();
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-spin-"));
  try {
    copyFileSync(MODEL, join(dir, "ipam.pml"));
    tool("spin", ["-a", ...defines, "ipam.pml"], dir, "spin -a");
    tool("gcc", [optimise, "-DSAFETY", "-DCOLLAPSE", "-DMEMLIM=12000", "-o", "pan", "pan.c"], dir, "gcc pan.c");
    const pan = spawnSync("./pan", [`-m${DEPTH}`], { cwd: dir, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    const output = `${pan.stdout}${pan.stderr}`;
    const result: PanResult = {
      errors: number(output, /errors: (\d+)/),
      states: number(output, /([\d.e+]+) states, stored/),
      depth: number(output, /depth reached (\d+)/),
      memoryMb: number(output, /([\d.]+)\s+total actual memory usage/),
      seconds: number(output, /elapsed time ([\d.e+]+) seconds/),
      truncated: /max search depth too small|out of memory|reached -DMEMLIM bound|search not completed/i.test(output),
      output,
    };
    if (existsSync(join(dir, "ipam.pml.trail"))) {
      const replay = spawnSync("spin", ["-t", ...defines, "ipam.pml"], { cwd: dir, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
      result.trail = `${replay.stdout}\n${replay.stderr}`;
    }
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const TIMEOUT = FULL ? 3_600_000 : 240_000;

describe("protocol model, checked exhaustively by spin", () => {
  for (const { name, defines, floor } of HOLDS) {
    it(`holds: ${name}`, { timeout: TIMEOUT }, () => {
      const run = check(defines, "-O2");
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

  for (const { name, defines, shows } of BROKEN) {
    it(`finds a counterexample: ${name}`, { timeout: TIMEOUT }, () => {
      // a counterexample needs no fast search: -O0 compiles pan in a fifth of -O2's time
      const run = check(defines, "-O0");
      expect(run.errors, run.output).toBeGreaterThanOrEqual(1);
      expect(run.trail, "pan wrote no trail").toBeDefined();
      for (const pattern of shows) expect(run.trail).toMatch(pattern);
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
