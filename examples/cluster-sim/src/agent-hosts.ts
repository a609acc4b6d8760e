import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { agentStats } from "@ipamkit/agent";
import type { SimNode, StoreKind } from "./cluster.js";
import { AGENT, limited } from "./cni.js";
import { processCpu } from "./cpu.js";

/**
 * The nodes' agent processes of a simulated cluster (src/cluster.ts): `perProcess` consecutive
 * nodes to a process, started, killed and counted together.
 */
export interface AgentHosts {
  kind: StoreKind;
  nodes: SimNode[];
  perProcess: number;
  /** Each group's agent process, once started (or while it starts). */
  hosts: Map<number, Promise<ChildProcess>>;
  /** Each live agent's last-read conflict counter; a killed agent's last count moves to `retired`. */
  lastCount: Map<string, number>;
  retired: number;
  /** CPU seconds of the agent processes killed so far. */
  retiredCpu: number;
}

export function agentHosts(kind: StoreKind, nodes: SimNode[], perProcess: number): AgentHosts {
  return { kind, nodes, perProcess, hosts: new Map(), lastCount: new Map(), retired: 0, retiredCpu: 0 };
}

/** The simulation's hollow-node host (src/hollow-nodes.ts), run from source. */
const HOLLOW_NODES = join(import.meta.dirname, "hollow-nodes.ts");

/** The command that hosts `members`' agents: the product agent at one node per process, else the hollow-node host. */
function hostCommand(members: SimNode[], kind: StoreKind, perProcess: number): [string, string[]] {
  const log = ["--log-level", process.env.SIM_AGENT_LOG ?? "warn", "--warm", kind === "kube-apiserver" ? "kubernetes" : kind];
  const [only] = members;
  if (perProcess === 1 && only !== undefined) return [AGENT, ["--socket", only.socket, "--node-name", only.name, ...log]];
  const nodes = members.flatMap((member) => ["--node", `${member.name}=${member.socket}`]);
  return [process.execPath, ["--conditions=@ipamkit/source", "--import", "tsx", HOLLOW_NODES, ...nodes, ...log]];
}

const groupOf = (a: AgentHosts, node: SimNode) => Math.floor(a.nodes.indexOf(node) / a.perProcess);
const membersOf = (a: AgentHosts, group: number) => a.nodes.slice(group * a.perProcess, (group + 1) * a.perProcess);

/** Starts the agent process of a group of nodes and waits until every one of their sockets answers. */
async function startHost(a: AgentHosts, group: number): Promise<ChildProcess> {
  const members = membersOf(a, group);
  const [command, args] = hostCommand(members, a.kind, a.perProcess);
  const child = spawn(command, args, {
    stdio: ["ignore", process.env.SIM_AGENT_LOG ? "inherit" : "ignore", "inherit"],
    // SIM_AGENT_NODE_OPTIONS: Node options for the agents only (e.g. --require a profiling preload)
    env: {
      PATH: process.env.PATH ?? "",
      // the node's flat file (the store's kubeconfig): every member's holds the same store keys
      IPAMKIT_CONFIGURATION_PATH: members[0]?.configurationPath ?? "",
      ...(process.env.SIM_AGENT_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SIM_AGENT_NODE_OPTIONS } : {}),
    },
  });
  for (const member of members) member.agent = child;
  const deadline = Date.now() + 20_000;
  for (const member of members) {
    for (;;) {
      try {
        await agentStats(member.socket, 1000);
        break;
      } catch {
        const exited = child.exitCode !== null || child.signalCode !== null;
        if (Date.now() > deadline || exited) throw new Error(`agent of ${member.name} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
  return child;
}

/** Starts the process hosting `node`'s agent unless it runs or is starting. */
export function startAgent(a: AgentHosts, node: SimNode): Promise<void> {
  const group = groupOf(a, node);
  let host = a.hosts.get(group);
  if (host === undefined) {
    host = startHost(a, group);
    a.hosts.set(group, host);
    const started = host;
    // a failed start is forgotten (unless a kill and a new start replaced it meanwhile)
    host.catch(() => a.hosts.get(group) === started && a.hosts.delete(group));
  }
  return host.then(() => undefined);
}

/** Starts every group's process, at most `processes` starting at once. */
export async function startAgents(a: AgentHosts, processes: number): Promise<void> {
  const groups = [...new Set(a.nodes.map((node) => groupOf(a, node)))];
  await limited(
    processes,
    groups.map((group) => () => startAgent(a, membersOf(a, group)[0] as SimNode)),
  );
}

/** SIGKILL to the process hosting `node`'s agent: every node it hosts loses its agent. */
export function killAgent(a: AgentHosts, node: SimNode): void {
  const members = membersOf(a, groupOf(a, node));
  for (const member of members) {
    a.retired += a.lastCount.get(member.name) ?? 0;
    a.lastCount.delete(member.name);
  }
  const child = node.agent;
  if (child?.pid !== undefined) a.retiredCpu += processCpu(child.pid)?.own ?? 0;
  child?.kill("SIGKILL");
  for (const member of members) member.agent = undefined;
  a.hosts.delete(groupOf(a, node));
}

/** The live agent processes' pids, each once. */
export function agentPids(a: AgentHosts): number[] {
  return [...new Set(a.nodes.flatMap((node) => (node.agent?.pid === undefined ? [] : [node.agent.pid])))];
}

/** Store conflicts seen so far: the live agents' counters plus the killed ones' last counts. */
export async function agentConflicts(a: AgentHosts): Promise<number> {
  let total = a.retired;
  for (const node of a.nodes) {
    if (node.agent === undefined) continue;
    const stats = await agentStats(node.socket).catch(() => ({ conflicts: 0 }));
    const now = Number(stats.conflicts ?? 0);
    total += now;
    a.lastCount.set(node.name, now);
  }
  return total;
}
