import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** A process's CPU seconds from /proc/<pid>/stat: its own (user + system) and its reaped children's; undefined once it is gone. */
export function processCpu(pid: number | "self"): { own: number; children: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // the fields after the command name (which may hold spaces and parentheses) start at field 3
  const f = text
    .slice(text.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  const at = (field: number) => f[field - 3] ?? 0;
  return { own: (at(14) + at(15)) / TICKS, children: (at(16) + at(17)) / TICKS };
}

/** CPU seconds the whole machine spent busy (all cores, /proc/stat: everything but idle and iowait). */
function machineBusy(): number {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, n) => sum + (Number.isFinite(n) ? n : 0), 0);
  return (total - (fields[3] ?? 0) - (fields[4] ?? 0)) / TICKS;
}

/** Where the simulated cluster's processes are. */
export interface CpuSources {
  /** The live agents' pids. */
  agentPids(): number[];
  /** CPU seconds of agents killed so far, each read just before its SIGKILL. */
  retiredAgentCpu(): number;
  /** The store's server process (etcd), when it is a process of its own. */
  storePid(): number | undefined;
  /** The simulation's helper processes (the native spawner): own CPU is the simulation's, reaped children's the CNI processes'. */
  helperPids(): number[];
}

/** CPU seconds by part, over a stretch of the simulation. */
export interface CpuParts {
  /** This process and its helpers: the simulation, the CNI spawns, the reconciler and the in-process test API server. */
  harness: number;
  /** The CNI plugin processes (reaped children that were not agents). */
  cni: number;
  agents: number;
  /** etcd's own process (0 for the Kubernetes store: its test API server is in `harness`). */
  store: number;
  /** Every core's busy time, whoever spent it. */
  machine: number;
}

function sample(sources: CpuSources) {
  const usage = process.cpuUsage();
  const storePid = sources.storePid();
  const helpers = sources.helperPids().map((pid) => processCpu(pid) ?? { own: 0, children: 0 });
  return {
    harness: (usage.user + usage.system) / 1e6 + helpers.reduce((sum, h) => sum + h.own, 0),
    reaped: (processCpu("self")?.children ?? 0) + helpers.reduce((sum, h) => sum + h.children, 0),
    retired: sources.retiredAgentCpu(),
    live: sources.agentPids().reduce((sum, pid) => sum + (processCpu(pid)?.own ?? 0), 0),
    store: storePid === undefined ? 0 : (processCpu(storePid)?.own ?? 0),
    machine: machineBusy(),
  };
}

/** Starts measuring; the returned function gives the CPU seconds spent since, by part. */
export function cpuSince(sources: CpuSources): () => CpuParts {
  const start = sample(sources);
  return () => {
    const end = sample(sources);
    const retired = end.retired - start.retired;
    return {
      harness: end.harness - start.harness,
      // a killed agent's whole lifetime lands in the reaped children's time once it is reaped
      cni: Math.max(0, end.reaped - start.reaped - retired),
      agents: end.live + end.retired - (start.live + start.retired),
      store: end.store - start.store,
      machine: end.machine - start.machine,
    };
  };
}
