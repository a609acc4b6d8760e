import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { openStore } from "@ipamkit/open-store/modules";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { type AgentHosts, agentConflicts, agentHosts, agentPids, killAgent, startAgent, startAgents } from "./agent-hosts.js";
import type { CpuSources } from "./cpu.js";
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
  /** The node's flat file's directory: node-level keys (its agent's socket, the store's kubeconfig), its runtime's and agent's IPAMKIT_CONFIGURATION_PATH. */
  configurationPath: string;
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
  /** The flat file's directory of a node without an agent (direct mode). */
  directNode: string;
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

/** How the result tables name the nodes: their count, and how many agents a process hosted when more than one. */
export function nodesLabel(nodeCount: number, agentsPerProcess = 1): string {
  return agentsPerProcess === 1 ? `${nodeCount}` : `${nodeCount} (${agentsPerProcess} per agent process)`;
}

/** The servers a cluster runs on: the API stand-in (replaced by a restart), the real kube-apiserver, etcd. */
interface Backends {
  kind: StoreKind;
  dir: string;
  server: KubeTestServer;
  apiserver: KubeApiserver | undefined;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  etcd: EtcdInstance | undefined;
}

async function startBackends(kind: StoreKind, dir: string): Promise<Backends> {
  const server = await startKubeTestServer({ port: 0, historyEvents: 100_000 });
  const apiserver =
    kind === "kube-apiserver" ? await startKubeApiserver({ namespace: POOL_NAMESPACE, namespaces: POD_NAMESPACES }) : undefined;
  const kubeconfigPath = apiserver?.kubeconfigPath ?? join(dir, "kubeconfig");
  if (apiserver === undefined) await server.writeKubeconfig(kubeconfigPath, { namespace: POOL_NAMESPACE });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const etcd = kind === "etcd" ? await startEtcd() : undefined;
  return { kind, dir, server, apiserver, kubeConfig, kubeconfigPath, etcd };
}

async function restartApiServer(b: Backends): Promise<void> {
  if (b.apiserver !== undefined) throw new Error("restartApiServer: only the in-process stand-in loses its state on purpose");
  const port = Number(new URL(b.server.url).port);
  await b.server.close();
  b.server = await startKubeTestServer({ port, historyEvents: 100_000 });
}

/** The node-level keys of the cluster's store (the kubeconfig: only a node's flat file sets it). */
function storeNodeKeys(b: Backends): Record<string, unknown> {
  return b.kind === "kubernetes" || b.kind === "kube-apiserver" ? { kubernetes: { kubeconfig: b.kubeconfigPath } } : {};
}

/** Writes a node's flat file (0644, this user's) into `dir`. */
function writeNodeFile(dir: string, keys: Record<string, unknown>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "whereabouts.conf"), JSON.stringify(keys), { mode: 0o644 });
}

/**
 * The IPAM keys that select the cluster's store, and the node's flat file: a simulated runtime
 * (runCni) reads `configuration_path` to set its node's IPAMKIT_CONFIGURATION_PATH, and the
 * plugin, finding it equal to the node's own, says nothing about it. The node's flat file names
 * its agent's socket (agent_required): the agent keys are node-level.
 */
function ipamKeys(b: Backends, node: SimNode, nodeBlockSize: number | undefined): Record<string, unknown> {
  const store =
    b.kind === "etcd"
      ? { datastore: "etcd", etcd_host: b.etcd?.endpoint }
      : b.kind === "kubernetes" || b.kind === "kube-apiserver"
        ? { datastore: "kubernetes" }
        : { datastore: "file", data_dir: join(b.dir, "store") };
  const blocks = nodeBlockSize === undefined ? {} : { node_block_size: nodeBlockSize };
  return { ...store, ...blocks, configuration_path: node.configurationPath };
}

async function closeCluster(b: Backends, nodes: SimNode[]): Promise<void> {
  for (const child of new Set(nodes.map((node) => node.agent))) child?.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  await b.etcd?.stop();
  await b.server.close();
  await b.apiserver?.stop();
  rmSync(b.dir, { recursive: true, force: true });
}

/** The cluster's face: its backends and its nodes' agents behind the {@link Cluster} interface. */
function clusterOf(b: Backends, agents: AgentHosts, spawner: Spawner, options: ClusterOptions): Cluster {
  const { apiserver, etcd } = b;
  return {
    kind: b.kind,
    dir: b.dir,
    get server() {
      return b.server;
    },
    ...(apiserver === undefined ? {} : { apiserver }),
    restartApiServer: () => restartApiServer(b),
    kubeConfig: b.kubeConfig,
    kubeconfigPath: b.kubeconfigPath,
    core: b.kubeConfig.makeApiClient(CoreV1Api),
    ...(etcd === undefined ? {} : { etcd }),
    nodes: agents.nodes,
    spawner,
    ipam: (node) => ipamKeys(b, node, options.nodeBlockSize),
    directNode: join(b.dir, "nodes", "direct"),
    startAgent: (node) => startAgent(agents, node),
    startAgents: (processes) => startAgents(agents, processes),
    killAgent: (node) => killAgent(agents, node),
    agentPids: () => agentPids(agents),
    retiredAgentCpu: () => agents.retiredCpu,
    storePid: () => etcd?.pid,
    helperPids: () => spawner.helperPids(),
    conflicts: () => agentConflicts(agents),
    close: () => closeCluster(b, agents.nodes),
  };
}

export async function startCluster(kind: StoreKind, nodeCount: number, options: ClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join("/dev/shm", `ipamkit-sim-${kind}-`));
  const backends = await startBackends(kind, dir);
  const nodes: SimNode[] = Array.from({ length: nodeCount }, (_, i) => ({
    name: `node-${i}`,
    socket: join(dir, "run", `node-${i}.sock`),
    configurationPath: join(dir, "nodes", `node-${i}`),
    agent: undefined,
  }));
  for (const node of nodes)
    writeNodeFile(node.configurationPath, { ...storeNodeKeys(backends), agent_socket: node.socket, agent_required: true });
  // a node without an agent (direct mode): the SIGKILL campaign's
  writeNodeFile(join(dir, "nodes", "direct"), storeNodeKeys(backends));
  const spawner = options.spawner ?? nodeSpawner;
  const perProcess = options.agentsPerProcess ?? DEFAULT_AGENTS_PER_PROCESS;
  if (!Number.isInteger(perProcess) || perProcess < 1) throw new Error(`agentsPerProcess: a positive integer, not ${perProcess}`);
  return clusterOf(backends, agentHosts(kind, nodes, perProcess), spawner, options);
}

/** An ipamkit store on the cluster's backend (for the reconciler and the clean-read checks). */
export function openSimStore(cluster: Cluster): Promise<IpamStore> {
  if (cluster.kind === "etcd") return openStore({ datastore: "etcd", options: { endpoints: [cluster.etcd?.endpoint ?? ""] } });
  if (cluster.kind === "kubernetes" || cluster.kind === "kube-apiserver")
    return openStore({ datastore: "kubernetes", kubeconfig: cluster.kubeConfig, namespace: POOL_NAMESPACE });
  return openStore({ datastore: "file", dir: join(cluster.dir, "store") });
}
