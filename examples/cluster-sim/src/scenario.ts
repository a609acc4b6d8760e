import { type AuditResult, audit } from "./audit.js";
import type { Cluster } from "./cluster.js";
import { type CniOutcome, limited, quantile } from "./cni.js";
import { type CpuParts, cpuSince } from "./cpu.js";
import type { ReconcileRun } from "./reconciler-run.js";
import { type RequestCounts, requestsSince } from "./requests.js";
import { bringUp, everyPod, held, live, NS, type ScenarioContext, simPods, tearDown } from "./scenario-pods.js";
import { ipamkitIpam, type SimIpam } from "./sim-ipam.js";

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
  /** The IPAM the nodes' runtimes call (default: ipamkit through its agents). */
  ipam?: SimIpam;
  /**
   * Whether to run the power-cycle and its reconcile (default true). Whereabouts' runs leave it
   * out: its dead sandboxes' addresses would need its own reconciler (ip-control-loop), which is
   * not built here.
   */
  powerCycle?: boolean;
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
   * The requests the store's server answered during the phase (its closing audit excluded), by
   * verb and resource (`get ippools`; on etcd by RPC, src/requests.ts) — the agents', the
   * reconciler's and the simulation's own (pods, and the power-cycle's audit before the
   * reconcile). Undefined on the file store.
   */
  requests?: RequestCounts;
  /**
   * The same, for the phase's steps of one kind of call alone: all its DELs (with the pods'
   * deletion), all its ADDs (with the pods' creation and status), so that requests per call can be
   * told; with the calls made.
   */
  steps?: Partial<Record<CallVerb, { calls: number; requests: RequestCounts }>>;
}

/** The CNI calls a phase's steps are made of. */
export type CallVerb = "ADD" | "DEL";

// the network configuration of network k lives beside the pods' CNI calls; importers keep this path
export { networkConf } from "./scenario-pods.js";

/** Seconds since the call, each time the returned function is called. */
function timer(): () => number {
  const started = performance.now();
  return () => (performance.now() - started) / 1000;
}

/**
 * One step of a phase made of calls of one verb (every pod's DELs, or every pod's ADDs): `run`,
 * with the requests the store's server answered meanwhile recorded for that verb.
 */
type Step = (verb: CallVerb, run: () => Promise<void>) => Promise<void>;

/** What a phase's work adds to its result (the power-cycle's parts, its reconcile and its inner audit). */
type PhaseWork = (adds: CniOutcome[], others: CniOutcome[], step: Step) => Promise<Partial<PhaseResult> | undefined>;

/** Runs one phase's work and measures it: time, ADD latencies, failures, conflicts, CPU, requests, then the audit. */
async function phase(ctx: ScenarioContext, name: string, work: PhaseWork): Promise<PhaseResult> {
  const { cluster } = ctx;
  const conflictsBefore = await cluster.conflicts();
  const statsBefore = cluster.kind === "kubernetes" ? cluster.server.stats() : undefined;
  const requestsMade = await requestsSince(cluster);
  const adds: CniOutcome[] = [];
  const others: CniOutcome[] = [];
  const steps: NonNullable<PhaseResult["steps"]> = {};
  const step: Step = async (verb, run) => {
    const made = await requestsSince(cluster);
    const before = (verb === "ADD" ? adds : others).length;
    await run();
    const requests = await made();
    if (requests !== undefined) steps[verb] = { calls: (verb === "ADD" ? adds : others).length - before, requests };
  };
  const started = performance.now();
  const cpuSpent = cpuSince(cluster);
  const extra = (await work(adds, others, step)) ?? {};
  const seconds = (performance.now() - started) / 1000 - (extra.auditing ?? 0);
  const spent = cpuSpent();
  // a reconciler program is reaped by this process, like a CNI process: its CPU is moved to ours
  const moved = extra.reconcilerCpu ?? 0;
  const cpu = { ...spent, harness: spent.harness + moved, cni: Math.max(0, spent.cni - moved) };
  const agentConflicts = (await cluster.conflicts()) - conflictsBefore;
  const statsAfter = cluster.kind === "kubernetes" ? cluster.server.stats() : undefined;
  const httpConflicts = (statsAfter?.byStatus[409] ?? 0) - (statsBefore?.byStatus[409] ?? 0);
  const requests = await requestsMade();
  const ms = adds.map((a) => a.ms);
  return {
    phase: name,
    seconds,
    adds: adds.length,
    addP50: quantile(ms, 0.5),
    addP99: quantile(ms, 0.99),
    failed: [...adds, ...others].filter((o) => o.code !== 0).length,
    conflicts: Math.max(agentConflicts, httpConflicts),
    audit: audit(await held(cluster), live(ctx.pods)),
    cpu,
    ...(requests === undefined ? {} : { requests, steps }),
    ...extra,
  };
}

/** The power-cycle phase's work: every node loses power, the pods come back in new sandboxes, then one reconcile. */
async function powerCycle(
  ctx: ScenarioContext,
  reconcile: ScenarioOptions["reconcile"],
  adds: CniOutcome[],
  step: Step,
): Promise<Partial<PhaseResult>> {
  const { cluster, pods } = ctx;
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
  ctx.generation++;
  await step("ADD", () => everyPod(ctx, (pod) => bringUp(ctx, pod, adds)));
  const cniCalls = since() - agentsRestarted;
  const auditStarted = since();
  const leakedBeforeReconcile = audit(await held(cluster), live(pods)).leaked;
  const auditing = since() - auditStarted;
  const reconcileStarted = since();
  const run = await reconcile();
  if (run.failures.length > 0) throw new Error(`reconcile failed: ${run.failures.join("; ")}`);
  const parts = { "agents restarted": agentsRestarted, ADDs: cniCalls, reconcile: since() - reconcileStarted };
  return {
    reconciled: run.released,
    leakedBeforeReconcile,
    parts,
    auditing,
    ...(run.cpu === undefined ? {} : { reconcilerCpu: run.cpu }),
  };
}

export async function runScenario(cluster: Cluster, options: ScenarioOptions): Promise<PhaseResult[]> {
  const ctx: ScenarioContext = {
    cluster,
    ipam: options.ipam ?? ipamkitIpam(cluster),
    networks: options.networks,
    concurrency: options.concurrency,
    pods: simPods(cluster, options.pods),
    generation: 0,
  };
  const results: PhaseResult[] = [];
  const addAll = (adds: CniOutcome[], step: Step) => step("ADD", () => everyPod(ctx, (pod) => bringUp(ctx, pod, adds)));
  const deleteAll = (others: CniOutcome[], step: Step) => step("DEL", () => everyPod(ctx, (pod) => tearDown(ctx, pod, others)));
  results.push(await phase(ctx, "create all", (adds, _others, step) => addAll(adds, step).then(() => undefined)));
  results.push(
    await phase(ctx, "delete all and re-create", async (adds, others, step) => {
      await deleteAll(others, step);
      ctx.generation++;
      await addAll(adds, step);
      return undefined;
    }),
  );
  if (options.powerCycle !== false)
    results.push(
      await phase(ctx, "power-cycle every node, then reconcile", (adds, _others, step) => powerCycle(ctx, options.reconcile, adds, step)),
    );
  results.push(await phase(ctx, "delete all", (_adds, others, step) => deleteAll(others, step).then(() => undefined)));
  return results;
}
