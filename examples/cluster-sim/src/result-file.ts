import type { RawEnvelope } from "@ipamkit/bench-figures";
import type { PhaseResult } from "./scenario.js";
import type { IpamKind } from "./sim-ipam.js";

/**
 * The raw result of one `pnpm sim` run, as JSON (`--json FILE`): what the Markdown table shows and
 * more, with the commit measured — the file BENCHMARKS.md's and README's figures are generated
 * from (packages/bench-figures).
 */
export interface SimResultFile extends RawEnvelope {
  readonly bench: "cluster-sim";
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
