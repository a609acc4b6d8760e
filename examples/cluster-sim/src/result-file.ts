import { execFileSync } from "node:child_process";
import type { PhaseResult } from "./scenario.js";
import type { IpamKind } from "./sim-ipam.js";

/**
 * The raw result of one `pnpm sim` run, as JSON (`--json FILE`): what the Markdown table shows and
 * more, with the commit measured — the file BENCHMARKS.md's and README's figures are generated
 * from (scripts/bench-figures.ts).
 */
export interface SimResultFile {
  readonly kind: "cluster-sim";
  /** The commit of the code measured, and whether the working tree had changes beside it. */
  readonly commit: string;
  readonly dirty: boolean;
  readonly date: string;
  readonly node: string;
  /** The command line's options. */
  readonly argv: readonly string[];
  readonly concurrency: number;
  readonly spawner: string;
  /** The machine's floors measured first: as many no-op processes as `calls`, at the same concurrency. */
  readonly floor: readonly { readonly label: string; readonly calls: number; readonly seconds: number }[];
  readonly runs: readonly SimRun[];
}

/** One IPAM's scenario on one store at one number of networks. */
export interface SimRun {
  readonly ipam: IpamKind;
  readonly ipamLabel: string;
  readonly store: string;
  readonly nodes: number;
  readonly agentsPerProcess: number;
  readonly blockSize: number | null;
  readonly pods: number;
  readonly networks: number;
  readonly phases: readonly PhaseResult[];
}

/** The commit checked out here (12 hex digits) and whether tracked files differ from it. */
export function currentCommit(cwd = process.cwd()): { commit: string; dirty: boolean } {
  const git = (...args: string[]) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
  try {
    return { commit: git("rev-parse", "--short=12", "HEAD"), dirty: git("status", "--porcelain", "--untracked-files=no") !== "" };
  } catch {
    return { commit: "unknown", dirty: true };
  }
}
