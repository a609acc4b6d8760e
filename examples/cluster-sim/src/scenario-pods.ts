import { type Held, readEtcd, readFileStore, readIpPools } from "./audit.js";
import { type Cluster, POOL_NAMESPACE, type SimNode } from "./cluster.js";
import { type CniOutcome, limited, runCni } from "./cni.js";
import { ipamkitIpam, type SimIpam } from "./sim-ipam.js";

/** The scenario's pods' lives (src/scenario.ts): their objects, their CNI calls, what they hold. */

export interface SimPod {
  name: string;
  node: SimNode;
  uid: string;
  sandbox: string;
  /** Address per network, once added. */
  ips: string[];
}

/** What one scenario run works on: its cluster, its pods, and the sandboxes' generation. */
export interface ScenarioContext {
  cluster: Cluster;
  /** The IPAM the nodes' runtimes call (ipamkit, or Whereabouts' binary). */
  ipam: SimIpam;
  networks: number;
  /** CNI processes running at once across the whole simulated cluster. */
  concurrency: number;
  pods: SimPod[];
  /** Part of every new sandbox's name: bumped before all pods come up again in new sandboxes. */
  generation: number;
}

export const NS = "sim";

const networkName = (k: number) => `net-${k}`;
const rangeOf = (k: number) => `10.${100 + k}.0.0/20`;

/** The network configuration a node's runtime passes for network k (net-k, its own /20), to ipamkit unless told. */
export function networkConf(cluster: Cluster, node: SimNode, k: number, ipam: SimIpam = ipamkitIpam(cluster)): string {
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: networkName(k),
    type: "macvlan",
    ipam: { range: rangeOf(k), network_name: networkName(k), ...ipam.keys(node) },
  });
}

/** `count` StatefulSet pods spread over the cluster's nodes in turn, none up yet. */
export function simPods(cluster: Cluster, count: number): SimPod[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `sts-${i}`,
    node: cluster.nodes[i % cluster.nodes.length] as SimNode,
    uid: "",
    sandbox: "",
    ips: [],
  }));
}

/** What the simulation knows to be attached now. */
export function live(pods: SimPod[]): Held[] {
  return pods.flatMap((p) =>
    p.ips.map((address, k) => ({ network: networkName(k), address, containerId: p.sandbox, ifName: `net${k + 1}` })),
  );
}

/** What the store holds now, read independently of ipamkit. */
export async function held(cluster: Cluster): Promise<Held[]> {
  if (cluster.kind === "etcd") return readEtcd(cluster.etcd?.endpoint ?? "");
  if (cluster.kind === "kubernetes" || cluster.kind === "kube-apiserver") return readIpPools(cluster.kubeConfig, POOL_NAMESPACE);
  return readFileStore(`${cluster.dir}/store`);
}

/** One CNI call for a pod's attachment to network k (interface net<k+1>), to the scenario's IPAM. */
function attachment(ctx: ScenarioContext, command: "ADD" | "DEL", pod: SimPod, k: number): Promise<CniOutcome> {
  return runCni(
    {
      command,
      containerId: pod.sandbox,
      ifName: `net${k + 1}`,
      pod: { namespace: NS, name: pod.name, uid: pod.uid },
      conf: networkConf(ctx.cluster, pod.node, k, ctx.ipam),
      plugin: ctx.ipam.plugin,
    },
    ctx.cluster.spawner,
  );
}

/** A pod comes up: its object, one ADD per network (as Multus calls the IPAM), then Running with network-status. */
export async function bringUp(ctx: ScenarioContext, pod: SimPod, outcomes: CniOutcome[]): Promise<void> {
  const { cluster } = ctx;
  const created = await cluster.core.createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name: pod.name },
      spec: { nodeName: pod.node.name, containers: [{ name: "app", image: "registry.example/app:1" }] },
    },
  });
  pod.uid = created.metadata?.uid ?? "";
  pod.sandbox = `sandbox-${ctx.generation}-${pod.name}`;
  pod.ips = [];
  for (let k = 0; k < ctx.networks; k++) {
    const outcome = await attachment(ctx, "ADD", pod, k);
    outcomes.push(outcome);
    if (outcome.ip === undefined) throw new Error(`ADD ${pod.name} net${k + 1}: ${outcome.error}`);
    pod.ips.push(outcome.ip);
  }
  const status = pod.ips.map((ip, k) => ({ name: `${NS}/${networkName(k)}`, interface: `net${k + 1}`, ips: [ip] }));
  await cluster.core.replaceNamespacedPodStatus({
    namespace: NS,
    name: pod.name,
    body: {
      ...created,
      metadata: { ...created.metadata, annotations: { "k8s.v1.cni.cncf.io/network-status": JSON.stringify(status) } },
      status: { phase: "Running" },
    },
  });
}

/** A pod goes away cleanly: one DEL per network, then the object. */
export async function tearDown(ctx: ScenarioContext, pod: SimPod, outcomes: CniOutcome[]): Promise<void> {
  for (let k = 0; k < ctx.networks; k++) {
    const outcome = await attachment(ctx, "DEL", pod, k);
    outcomes.push(outcome);
    if (outcome.code !== 0) throw new Error(`DEL ${pod.name}: ${outcome.error}`);
  }
  pod.ips = [];
  await ctx.cluster.core.deleteNamespacedPod({ namespace: NS, name: pod.name, gracePeriodSeconds: 0 });
}

/** `run` for every pod, `ctx.concurrency` at a time. */
export async function everyPod(ctx: ScenarioContext, run: (pod: SimPod) => Promise<void>): Promise<void> {
  await limited(
    ctx.concurrency,
    ctx.pods.map((pod) => () => run(pod)),
  );
}
