import { type AuditResult, audit, type Held, readEtcd, readFileStore, readIpPools } from "./audit.js";
import { type Cluster, POOL_NAMESPACE, type SimNode } from "./cluster.js";
import { type CniOutcome, limited, quantile, runCni } from "./cni.js";
import { type CpuParts, cpuSince } from "./cpu.js";
import type { ReconcileRun } from "./reconciler-run.js";

export interface ScenarioOptions {
  pods: number;
  networks: number;
  /** CNI processes running at once across the whole simulated cluster (one 2-core machine). */
  concurrency: number;
  /**
   * One reconciler pass (grace 0), for the power-cycle: the reconciler program in its own process
   * (`reconcileAsProgram`; `cpu` its CPU seconds, counted as the simulation's, not as a CNI
   * process's), or `reconcileInProcess`.
   */
  reconcile: () => Promise<ReconcileRun>;
}

export interface PhaseResult {
  phase: string;
  seconds: number;
  adds: number;
  addP50: number;
  addP99: number;
  failed: number;
  conflicts: number;
  audit: AuditResult;
  /** Reservations released by the reconciler (power-cycle phase). */
  reconciled?: number;
  /** Leaked before the reconciler ran (power-cycle phase: the dead sandboxes). */
  leakedBeforeReconcile?: number;
  /** Seconds of the phase's parts, where it has more than CNI calls (power-cycle). */
  parts?: Record<string, number>;
  /**
   * Seconds the simulation spent auditing the store inside the phase (the power-cycle's count of
   * leaks before the reconcile): the observer's time, not the cluster's, so not in `seconds` — as
   * the audit closing every phase is not.
   */
  auditing?: number;
  /** CPU seconds of the reconciler's own process, when it ran as a program (in the `harness` part of `cpu`). */
  reconcilerCpu?: number;
  /** CPU seconds the phase cost, by part (its closing audit excluded). */
  cpu: CpuParts;
  /**
   * Kubernetes only: the requests the test API server answered during the phase (its closing audit
   * excluded), by verb and resource (`get ippools`) — the agents', the reconciler's and the
   * simulation's own (pods, and the power-cycle's audit before the reconcile).
   */
  requests?: Record<string, number>;
}

/**
 * From now on, the requests the Kubernetes test API server answers, by verb and resource (those
 * made at least once), each time the returned function is called; undefined on other stores.
 */
export function requestsSince(cluster: Cluster): () => Record<string, number> | undefined {
  if (cluster.kind !== "kubernetes") return () => undefined;
  const before = cluster.server.stats().byResource;
  return () =>
    Object.fromEntries(
      Object.entries(cluster.server.stats().byResource)
        .map(([key, n]): [string, number] => [key, n - (before[key] ?? 0)])
        .filter(([, n]) => n > 0),
    );
}

/** `12,345 requests: 4,000 get ippools, …` — most frequent first. */
export function requestsText(requests: Record<string, number>): string {
  const entries = Object.entries(requests).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  return `${total.toLocaleString("en")} requests: ${entries.map(([key, n]) => `${n.toLocaleString("en")} ${key}`).join(", ")}`;
}

interface SimPod {
  name: string;
  node: SimNode;
  uid: string;
  sandbox: string;
  /** Address per network, once added. */
  ips: string[];
}

const NS = "sim";

/** Seconds since the call, each time the returned function is called. */
function timer(): () => number {
  const started = performance.now();
  return () => (performance.now() - started) / 1000;
}
const networkName = (k: number) => `net-${k}`;
const rangeOf = (k: number) => `10.${100 + k}.0.0/20`;

/** The network configuration a node's runtime passes for network k (net-k, its own /20). */
export function networkConf(cluster: Cluster, node: SimNode, k: number): string {
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: networkName(k),
    type: "macvlan",
    ipam: { type: "ipamkit", range: rangeOf(k), network_name: networkName(k), ...cluster.ipam(node) },
  });
}

export async function runScenario(cluster: Cluster, options: ScenarioOptions): Promise<PhaseResult[]> {
  const { networks } = options;
  let generation = 0;
  const pods: SimPod[] = Array.from({ length: options.pods }, (_, i) => ({
    name: `sts-${i}`,
    node: cluster.nodes[i % cluster.nodes.length] as SimNode,
    uid: "",
    sandbox: "",
    ips: [],
  }));
  const conf = (node: SimNode, k: number) => networkConf(cluster, node, k);

  /** What the simulation knows to be attached now. */
  const live = (): Held[] =>
    pods.flatMap((p) => p.ips.map((address, k) => ({ network: networkName(k), address, containerId: p.sandbox, ifName: `net${k + 1}` })));

  async function held(): Promise<Held[]> {
    if (cluster.kind === "etcd") return readEtcd(cluster.etcd?.endpoint ?? "");
    if (cluster.kind === "kubernetes" || cluster.kind === "kube-apiserver") return readIpPools(cluster.kubeConfig, POOL_NAMESPACE);
    return readFileStore(`${cluster.dir}/store`);
  }

  /** One CNI call for a pod's attachment to network k (interface net<k+1>). */
  const attachment = (command: "ADD" | "DEL", pod: SimPod, k: number) =>
    runCni(
      {
        command,
        containerId: pod.sandbox,
        ifName: `net${k + 1}`,
        pod: { namespace: NS, name: pod.name, uid: pod.uid },
        conf: conf(pod.node, k),
      },
      cluster.spawner,
    );

  /** A pod comes up: its object, one ADD per network (as Multus calls the IPAM), then Running with network-status. */
  async function bringUp(pod: SimPod, outcomes: CniOutcome[]): Promise<void> {
    const created = await cluster.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: pod.name },
        spec: { nodeName: pod.node.name, containers: [{ name: "app", image: "registry.example/app:1" }] },
      },
    });
    pod.uid = created.metadata?.uid ?? "";
    pod.sandbox = `sandbox-${generation}-${pod.name}`;
    pod.ips = [];
    for (let k = 0; k < networks; k++) {
      const outcome = await attachment("ADD", pod, k);
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
  async function tearDown(pod: SimPod, outcomes: CniOutcome[]): Promise<void> {
    for (let k = 0; k < networks; k++) {
      const outcome = await attachment("DEL", pod, k);
      outcomes.push(outcome);
      if (outcome.code !== 0) throw new Error(`DEL ${pod.name}: ${outcome.error}`);
    }
    pod.ips = [];
    await cluster.core.deleteNamespacedPod({ namespace: NS, name: pod.name, gracePeriodSeconds: 0 });
  }

  async function phase(
    name: string,
    work: (adds: CniOutcome[], others: CniOutcome[]) => Promise<Partial<PhaseResult> | undefined>,
  ): Promise<PhaseResult> {
    const conflictsBefore = await cluster.conflicts();
    const statsBefore = cluster.kind === "kubernetes" ? cluster.server.stats() : undefined;
    const requestsMade = requestsSince(cluster);
    const adds: CniOutcome[] = [];
    const others: CniOutcome[] = [];
    const started = performance.now();
    const cpuSpent = cpuSince(cluster);
    const extra = (await work(adds, others)) ?? {};
    const seconds = (performance.now() - started) / 1000 - (extra.auditing ?? 0);
    const spent = cpuSpent();
    // a reconciler program is reaped by this process, like a CNI process: its CPU is moved to ours
    const moved = extra.reconcilerCpu ?? 0;
    const cpu = { ...spent, harness: spent.harness + moved, cni: Math.max(0, spent.cni - moved) };
    const agentConflicts = (await cluster.conflicts()) - conflictsBefore;
    const statsAfter = cluster.kind === "kubernetes" ? cluster.server.stats() : undefined;
    const httpConflicts = (statsAfter?.byStatus[409] ?? 0) - (statsBefore?.byStatus[409] ?? 0);
    const requests = requestsMade();
    const ms = adds.map((a) => a.ms);
    return {
      phase: name,
      seconds,
      adds: adds.length,
      addP50: quantile(ms, 0.5),
      addP99: quantile(ms, 0.99),
      failed: [...adds, ...others].filter((o) => o.code !== 0).length,
      conflicts: Math.max(agentConflicts, httpConflicts),
      audit: audit(await held(), live()),
      cpu,
      ...(requests === undefined ? {} : { requests }),
      ...extra,
    };
  }

  const everyPod = (run: (pod: SimPod) => Promise<void>) =>
    limited(
      options.concurrency,
      pods.map((pod) => () => run(pod)),
    );
  const results: PhaseResult[] = [];

  results.push(await phase("create all", (adds) => everyPod((pod) => bringUp(pod, adds)).then(() => undefined)));
  results.push(
    await phase("delete all and re-create", async (adds, others) => {
      await everyPod((pod) => tearDown(pod, others));
      generation++;
      await everyPod((pod) => bringUp(pod, adds));
      return undefined;
    }),
  );
  results.push(
    await phase("power-cycle every node, then reconcile", async (adds) => {
      // every node loses power: its agent dies, no DEL ever comes for the old sandboxes
      for (const node of cluster.nodes) cluster.killAgent(node);
      // the control plane force-deletes the pods; the StatefulSet re-creates them under the same names
      await limited(
        50,
        pods.map(
          (pod) => () => cluster.core.deleteNamespacedPod({ namespace: NS, name: pod.name, gracePeriodSeconds: 0 }).then(() => undefined),
        ),
      );
      for (const pod of pods) pod.ips = [];
      // on a real cluster every node restarts its own agent on its own CPUs; here all share two
      const since = timer();
      await cluster.startAgents(8);
      const agentsRestarted = since();
      generation++;
      await everyPod((pod) => bringUp(pod, adds));
      const cniCalls = since() - agentsRestarted;
      const auditStarted = since();
      const leakedBeforeReconcile = audit(await held(), live()).leaked;
      const auditing = since() - auditStarted;
      const reconcileStarted = since();
      const run = await options.reconcile();
      if (run.failures.length > 0) throw new Error(`reconcile failed: ${run.failures.join("; ")}`);
      const parts = { "agents restarted": agentsRestarted, ADDs: cniCalls, reconcile: since() - reconcileStarted };
      return {
        reconciled: run.released,
        leakedBeforeReconcile,
        parts,
        auditing,
        ...(run.cpu === undefined ? {} : { reconcilerCpu: run.cpu }),
      };
    }),
  );
  results.push(await phase("delete all", (_adds, others) => everyPod((pod) => tearDown(pod, others)).then(() => undefined)));
  return results;
}
