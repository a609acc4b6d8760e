/**
 * Running spin on the protocol model (model/ipam.pml): an exhaustive check by pan (its figures,
 * and spin's replay of the trail when it found a counterexample), or a random simulation. Each
 * run in a directory of its own. Test helper (protocol-model.test.ts, protocol-link.replay.test.ts).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const MODEL = fileURLToPath(new URL("../model/ipam.pml", import.meta.url));
/** pan's depth bound: far beyond the deepest path (~1 000 steps); a search cut short by it fails the test. */
export const DEPTH = 100_000;

export interface PanResult {
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

export interface CheckOptions {
  /** -O2 for long searches; -O0 compiles in a fifth of the time (short searches, counterexamples). */
  optimise?: "-O0" | "-O2";
  /** Breadth-first: the shortest counterexample, found early (a broken variant). */
  breadthFirst?: boolean;
  /** pan's memory bound in MB. */
  memoryMb?: number;
}

function tool(command: string, args: string[], cwd: string, what: string): string {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (result.error !== undefined) throw new Error(`${what}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${what} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** Fails with the install command when spin or gcc is missing. */
export function requireTools(): void {
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

function inModelDir<T>(fn: (dir: string) => T): T {
  requireTools();
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-spin-"));
  try {
    copyFileSync(MODEL, join(dir, "ipam.pml"));
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** spin -a, gcc, pan; with a trail, spin's replay of it. */
export function checkModel(defines: readonly string[], options: CheckOptions = {}): PanResult {
  return inModelDir((dir) => {
    tool("spin", ["-a", ...defines, "ipam.pml"], dir, "spin -a");
    const flags = [options.optimise ?? "-O0", "-DSAFETY", "-DCOLLAPSE", `-DMEMLIM=${options.memoryMb ?? 12_000}`];
    if (options.breadthFirst === true) flags.push("-DBFS");
    tool("gcc", [...flags, "-w", "-o", "pan", "pan.c"], dir, "gcc pan.c");
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
  });
}

/** One random run of the model (spin's simulator, seed `seed`): its printed steps. */
export function simulateModel(defines: readonly string[], seed: number): string {
  return inModelDir((dir) => tool("spin", [`-n${seed}`, ...defines, "ipam.pml"], dir, "spin simulation"));
}
