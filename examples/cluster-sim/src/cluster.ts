import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { agentStats } from "@ipamkit/agent";
import type { IpamStore } from "@ipamkit/core";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { openStore } from "@ipamkit/open-store/modules";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { AGENT, limited } from "./cni.js";
import { type CpuSources, processCpu } from "./cpu.js";
import { nodeSpawner, type Spawner } from "./spawner.js";

/**
 * Where the pools live: etcd, the in-process Kubernetes API stand-in (`kubernetes`), the suite's
 * real kube-apiserver (`kube-apiserver`, test-infra/kube-apiserver), or the file store (one node).
 */
export type StoreKind = "etcd" | "kubernetes" | "kube-apiserver" | "file";

/** One simulated node: its name and the process of its node-local agent (dist/ipamkit-agent, or a hollow-node host shared with other nodes). */
export interface SimNode {
  name: string;
  socket: string;
  agent: ChildProcess | undefined;
}

export interface Cluster extends CpuSources {
  kind: StoreKind;
  dir: string;
  /** The in-process API stand-in: pods live here (the reconciler reads them), for `kubernetes` the pools too. */
  server: KubeTestServer;
  /** With `kube-apiserver`: the real API server, which then holds the pods and the pools. */
  apiserver?: KubeApiserver;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  core: CoreV1Api;
  etcd?: EtcdInstance;
  nodes: SimNode[];
  /** How the nodes' runtimes start CNI processes (not closed with the cluster). */
  spawner: Spawner;
  /** The IPAM keys that select this store (plus the agent socket, per node). */
  ipam(node: SimNode): Record<string, unknown>;
  startAgent(node: SimNode): Promise<void>;
  /**
   * Starts every node's agent, at most `processes` agent processes starting at once (hollow nodes
   * share one: their process is started once, not once per node).
   */
  startAgents(processes: number): Promise<void>;
  /** Stops the test API server and starts an empty one on the same port (its state is in memory only). */
  restartApiServer(): Promise<void>;
  /** SIGKILL: the node lost power (with it every node its agent's process hosts). */
  killAgent(node: SimNode): void;
  /** Store conflicts seen so far (the agents' counters, summed). */
  conflicts(): Promise<number>;
  close(): Promise<void>;
}

export const POOL_NAMESPACE = "kube-system";
/** The namespaces the scenario ("sim") and the kill campaign ("kill") create their pods in; the stand-in needs none created. */
const POD_NAMESPACES = ["sim", "kill"];

export interface ClusterOptions {
  /** Per-node blocks of this many addresses (`node_block_size`); each agent runs with its node's name. */
  nodeBlockSize?: number;
  /** How CNI processes are started (default: Node's spawn). */
  spawner?: Spawner;
  /**
   * How many nodes' agents one process hosts (default {@link DEFAULT_AGENTS_PER_PROCESS}). More
   * than 1 packs consecutive nodes as hollow nodes, as kubemark does (src/hollow-nodes.ts, this
   * simulation's own program): each keeps its own agent (socket, node name, store clients, memory)
   * but they share one Node process, so 100 nodes do not need 100 processes contending for two
   * cores. 1 runs the product agent, dist/ipamkit-agent, once per node, as deployed.
   */
  agentsPerProcess?: number;
}

/** Hollow nodes per agent process unless told otherwise (--agents-per-process). */
export const DEFAULT_AGENTS_PER_PROCESS = 10;

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

/** How the result tables name the nodes: their count, and how many agents a process hosted when more than one. */
export function nodesLabel(nodeCount: number, agentsPerProcess = 1): string {
  return agentsPerProcess === 1 ? `${nodeCount}` : `${nodeCount} (${agentsPerProcess} per agent process)`;
}

export async function startCluster(kind: StoreKind, nodeCount: number, options: ClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join("/dev/shm", `ipamkit-sim-${kind}-`));
  let server = await startKubeTestServer({ port: 0, historyEvents: 100_000 });
  const apiserver =
    kind === "kube-apiserver" ? await startKubeApiserver({ namespace: POOL_NAMESPACE, namespaces: POD_NAMESPACES }) : undefined;
  const kubeconfigPath = apiserver?.kubeconfigPath ?? join(dir, "kubeconfig");
  if (apiserver === undefined) await server.writeKubeconfig(kubeconfigPath, { namespace: POOL_NAMESPACE });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const etcd = kind === "etcd" ? await startEtcd() : undefined;
  const nodes: SimNode[] = Array.from({ length: nodeCount }, (_, i) => ({
    name: `node-${i}`,
    socket: join(dir, "run", `node-${i}.sock`),
    agent: undefined,
  }));
  /** Each live agent's last-read conflict counter; a killed agent's last count moves to `retired`. */
  const lastCount = new Map<string, number>();
  let retired = 0;
  let retiredCpu = 0;
  const spawner = options.spawner ?? nodeSpawner;
  const perProcess = options.agentsPerProcess ?? DEFAULT_AGENTS_PER_PROCESS;
  if (!Number.isInteger(perProcess) || perProcess < 1) throw new Error(`agentsPerProcess: a positive integer, not ${perProcess}`);
  const groupOf = (node: SimNode) => Math.floor(nodes.indexOf(node) / perProcess);
  const membersOf = (group: number) => nodes.slice(group * perProcess, (group + 1) * perProcess);
  /** Each group's agent process, once started (or while it starts). */
  const hosts = new Map<number, Promise<ChildProcess>>();
  /** Starts the agent process of a group of nodes and waits until every one of their sockets answers. */
  async function startHost(group: number): Promise<ChildProcess> {
    const members = membersOf(group);
    const [command, args] = hostCommand(members, kind, perProcess);
    const child = spawn(command, args, {
      stdio: ["ignore", process.env.SIM_AGENT_LOG ? "inherit" : "ignore", "inherit"],
      // SIM_AGENT_NODE_OPTIONS: Node options for the agents only (e.g. --require a profiling preload)
      env: {
        PATH: process.env.PATH ?? "",
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
  function startAgent(node: SimNode): Promise<void> {
    const group = groupOf(node);
    let host = hosts.get(group);
    if (host === undefined) {
      host = startHost(group);
      hosts.set(group, host);
      const started = host;
      // a failed start is forgotten (unless a kill and a new start replaced it meanwhile)
      host.catch(() => hosts.get(group) === started && hosts.delete(group));
    }
    return host.then(() => undefined);
  }
  return {
    kind,
    dir,
    get server() {
      return server;
    },
    ...(apiserver === undefined ? {} : { apiserver }),
    async restartApiServer() {
      if (apiserver !== undefined) throw new Error("restartApiServer: only the in-process stand-in loses its state on purpose");
      const port = Number(new URL(server.url).port);
      await server.close();
      server = await startKubeTestServer({ port, historyEvents: 100_000 });
    },
    kubeConfig,
    kubeconfigPath,
    core: kubeConfig.makeApiClient(CoreV1Api),
    ...(etcd === undefined ? {} : { etcd }),
    nodes,
    spawner,
    ipam(node) {
      const store =
        kind === "etcd"
          ? { datastore: "etcd", etcd_host: etcd?.endpoint }
          : kind === "kubernetes" || kind === "kube-apiserver"
            ? { datastore: "kubernetes", kubernetes: { kubeconfig: kubeconfigPath } }
            : { datastore: "file", data_dir: join(dir, "store") };
      const blocks = options.nodeBlockSize === undefined ? {} : { node_block_size: options.nodeBlockSize };
      return { ...store, ...blocks, configuration_path: dir, agent_socket: node.socket, agent_required: true };
    },
    startAgent,
    async startAgents(processes) {
      const groups = [...new Set(nodes.map(groupOf))];
      await limited(
        processes,
        groups.map((group) => () => startAgent(membersOf(group)[0] as SimNode)),
      );
    },
    killAgent(node) {
      const members = membersOf(groupOf(node));
      for (const member of members) {
        retired += lastCount.get(member.name) ?? 0;
        lastCount.delete(member.name);
      }
      const child = node.agent;
      if (child?.pid !== undefined) retiredCpu += processCpu(child.pid)?.own ?? 0;
      child?.kill("SIGKILL");
      for (const member of members) member.agent = undefined;
      hosts.delete(groupOf(node));
    },
    agentPids: () => [...new Set(nodes.flatMap((node) => (node.agent?.pid === undefined ? [] : [node.agent.pid])))],
    retiredAgentCpu: () => retiredCpu,
    storePid: () => etcd?.pid,
    helperPids: () => spawner.helperPids(),
    async conflicts() {
      let total = retired;
      for (const node of nodes) {
        if (node.agent === undefined) continue;
        const stats = await agentStats(node.socket).catch(() => ({ conflicts: 0 }));
        const now = Number(stats.conflicts ?? 0);
        total += now;
        lastCount.set(node.name, now);
      }
      return total;
    },
    async close() {
      for (const child of new Set(nodes.map((node) => node.agent))) child?.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      await etcd?.stop();
      await server.close();
      await apiserver?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An ipamkit store on the cluster's backend (for the reconciler and the clean-read checks). */
export function openSimStore(cluster: Cluster): Promise<IpamStore> {
  if (cluster.kind === "etcd") return openStore({ datastore: "etcd", options: { endpoints: [cluster.etcd?.endpoint ?? ""] } });
  if (cluster.kind === "kubernetes" || cluster.kind === "kube-apiserver")
    return openStore({ datastore: "kubernetes", kubeconfig: cluster.kubeConfig, namespace: POOL_NAMESPACE });
  return openStore({ datastore: "file", dir: join(cluster.dir, "store") });
}
