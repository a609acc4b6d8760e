import { ipamShare, type RequestCounts, totalOf } from "./requests.js";
import type { SimFile, SimPhase, SimRunOf } from "./schemas.js";

/** Figures read off `pnpm sim --json` results (examples/cluster-sim). */

export const CREATE = "create all";
/** The steady state: every node's blocks claimed, its agent's memory warm. */
export const RECREATE = "delete all and re-create";
export const POWER_CYCLE = "power-cycle every node, then reconcile";
export const DELETE = "delete all";

/** The IPAM's requests per call of one verb in a phase (the simulation's pods left out), with their breakdown. */
export function perCall(phase: SimPhase, verb: "ADD" | "DEL"): { total: number; by: RequestCounts } | undefined {
  const step = phase.steps?.[verb];
  if (step === undefined || step.calls === 0) return undefined;
  const ipam = ipamShare(step.requests);
  const by = Object.fromEntries(Object.entries(ipam).map(([key, n]) => [key, n / step.calls]));
  return { total: totalOf(ipam) / step.calls, by };
}

export const phaseOf = (run: SimRunOf, name: string): SimPhase | undefined => run.phases.find((p) => p.phase === name);

/** The run of that IPAM on that store (the first, if several networks were run: the widest). */
export function runOf(file: SimFile, ipam: "ipamkit" | "whereabouts", store: string): SimRunOf | undefined {
  const runs = file.runs.filter((r) => r.ipam === ipam && r.store === store);
  return runs.sort((a, b) => b.networks - a.networks)[0];
}

/** The slowest phase of a run. */
export function slowest(run: SimRunOf): SimPhase | undefined {
  return [...run.phases].sort((a, b) => b.seconds - a.seconds)[0];
}

/** The no-op floor of the run: as many no-op Node processes as the run has pods (the figure the simulation's target is set against). */
export function nodeFloor(file: SimFile, pods: number): { label: string; calls: number; seconds: number } | undefined {
  return file.floor.find((f) => f.label.includes("Node") && f.calls === pods);
}

/** Problems an audit found, and calls that failed, over every phase of every run of a file. */
export function problems(file: SimFile): number {
  return file.runs.reduce(
    (sum, run) => sum + run.phases.reduce((n, p) => n + p.failed + p.audit.heldTwice + p.audit.lost + p.audit.leaked, 0),
    0,
  );
}

/** `3.00 (1.00 create overlappingrangeipreservations, …)`, biggest first. */
export function breakdown(call: { total: number; by: RequestCounts }): string {
  const parts = Object.entries(call.by)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([key, n]) => `${n.toFixed(2)} ${key}`);
  return `${call.total.toFixed(2)} (${parts.join(", ")})`;
}
