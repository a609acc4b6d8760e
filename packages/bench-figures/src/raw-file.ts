import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root (this package lives in packages/bench-figures). */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** Where raw result files live. */
export const RESULTS_DIR = join(REPO_ROOT, "bench", "results");

/** What every raw result file starts with: which benchmark, on which code, when, how to run it again. */
export interface RawEnvelope {
  /** The benchmark's name (`whereabouts-interop`, `cni`, …). */
  readonly bench: string;
  /** The commit of the code measured (12 hex digits), and whether tracked files differed from it. */
  readonly commit: string;
  readonly dirty: boolean;
  readonly date: string;
  readonly node: string;
  /** The command that reproduces it. */
  readonly command: string;
}

/**
 * The commit checked out at `cwd` and whether tracked files other than raw results (bench/results/,
 * which a benchmark run rewrites) differ from it; `unknown` outside a git checkout.
 */
export function currentCommit(cwd = REPO_ROOT): { commit: string; dirty: boolean } {
  const git = (...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const changed = git("status", "--porcelain", "--untracked-files=no", "--", ":/", ":(exclude,top)bench/results");
    return { commit: git("rev-parse", "--short=12", "HEAD"), dirty: changed !== "" };
  } catch {
    return { commit: "unknown", dirty: true };
  }
}

/** The envelope of a raw result measured now, on the code checked out. */
export function rawEnvelope(bench: string, command: string): RawEnvelope {
  return { bench, ...currentCommit(), date: new Date().toISOString(), node: process.version, command };
}

/**
 * Writes a benchmark's raw result (its envelope and data) as JSON where `BENCH_JSON` says (a path,
 * or `1`: `bench/results/<bench>.json`); nothing when it is unset. Returns the path written.
 */
export function writeRawResult(envelope: RawEnvelope, data: object, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const target = env.BENCH_JSON;
  if (target === undefined || target === "") return undefined;
  const path = target === "1" ? join(RESULTS_DIR, `${envelope.bench}.json`) : target;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ ...envelope, ...data }, null, 2)}\n`);
  return path;
}
