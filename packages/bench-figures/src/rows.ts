import { count, ms, ratio, s, span, target } from "./format.js";
import type { RawFile } from "./raw-set.js";
import { CREATE, DELETE, nodeFloor, perCall, phaseOf, problems, RECREATE, runOf, slowest } from "./sim-figures.js";
import type { Sources } from "./sources.js";

/**
 * One figure against its baseline, measured in the same run, and where it comes from. Every row is
 * built from raw result files only (bench/results/); a row whose file is missing is left out.
 */
export interface Row {
  readonly what: string;
  readonly ipamkit: string;
  readonly baseline: string;
  readonly ratio: string;
  /** The target set for it, and whether it was met; undefined when none was set. */
  readonly target?: string;
  /** Why this baseline is the fairest one available (BENCHMARKS.md's summary shows it). */
  readonly fair?: string;
  readonly raw: readonly RawFile<{ commit?: string | undefined; dirty?: boolean | undefined }>[];
}

type RowOf = (src: Sources) => Row | undefined;

const mode = (src: Sources, id: string) => src.interop?.data.modes.find((m) => m.id === id);

/** One ADD through the agent (or direct) on a real kube-apiserver, beside Whereabouts' binary. */
const interopAdd =
  (id: "agent" | "direct", what: string): RowOf =>
  (src) => {
    const [ours, theirs] = [mode(src, id), mode(src, "whereabouts")];
    if (src.interop === undefined || ours === undefined || theirs === undefined) return undefined;
    return {
      what,
      ipamkit: ms(ours.addMedianMs),
      baseline: `Whereabouts ${src.interop.data.whereabouts}: ${ms(theirs.addMedianMs)}`,
      ratio: ratio(ours.addMedianMs / theirs.addMedianMs),
      fair: "the incumbent's own binary, same kube-apiserver, calls interleaved one by one",
      raw: [src.interop],
    };
  };

const interopBurst: RowOf = (src) => {
  const [ours, theirs] = [mode(src, "agent"), mode(src, "whereabouts")];
  if (src.interop === undefined || ours === undefined || theirs === undefined) return undefined;
  const { calls, batch } = src.interop.data;
  const ratios = ours.burstAddS.map((x, i) => x / (theirs.burstAddS[i] ?? Number.NaN));
  return {
    what: `${calls} ADDs ${batch} at a time on a real kube-apiserver, through the agent`,
    ipamkit: span(ours.burstAddS, s),
    baseline: `Whereabouts: ${span(theirs.burstAddS, s)}`,
    ratio: span(ratios, ratio),
    fair: "the same; rounds alternate which binary goes first",
    raw: [src.interop],
  };
};

/** ADD+DEL per call through the agent beside host-local, with `allocations` already held. */
const cniRow =
  (allocations: number): RowOf =>
  (src) => {
    const row = src.cni?.data.byAllocations.find((r) => r.allocations === allocations);
    if (src.cni === undefined || row === undefined) return undefined;
    return {
      what: `ADD+DEL per call through the agent, file store, ${count(allocations)} allocations`,
      ipamkit: ms(row.agentMs),
      baseline: `host-local 1.1.1: ${ms(row.hostLocalMs)}`,
      ratio: ratio(row.agentMs / row.hostLocalMs),
      fair: "the reference node-local IPAM plugin, on the same tmpfs, called as a runtime calls it",
      raw: [src.cni],
    };
  };

const addVsNode: RowOf = (src) => {
  const results = src.addVsNode?.data.results ?? [];
  const node = results.find((r) => r.command === "node -e 0");
  const file = results.find((r) => r.command.includes("(file)"));
  if (src.addVsNode === undefined || node === undefined || file === undefined) return undefined;
  const etcd = results.find((r) => r.command.includes("(etcd)"));
  const ours = etcd === undefined ? [file.medianMs] : [file.medianMs, etcd.medianMs];
  return {
    what: `ADD through the agent by the static binary, file store${etcd === undefined ? "" : " / etcd"}`,
    ipamkit: ours.map((x) => ms(x)).join(" / "),
    baseline: `\`node -e 0\`: ${ms(node.medianMs)}`,
    ratio: ours.map((x) => ratio(x / node.medianMs)).join(" / "),
    fair: "the start of any Node process, which every Node plugin pays before doing anything",
    raw: [src.addVsNode],
  };
};

const core: RowOf = (src) => {
  const row = src.core?.data.byCount.find((r) => r.case.startsWith("100k") && r.case.includes("dense"));
  if (src.core === undefined || row === undefined) return undefined;
  return {
    what: "core allocate+release, 100k reservations, dense",
    ipamkit: `${row.ipamkitUs.toFixed(2)} µs`,
    baseline: `linear lowest-free scan: ${count(row.linearScanUs)} µs`,
    ratio: `1 / ${count(row.linearScanUs / row.ipamkitUs)}`,
    fair: "Whereabouts' way of finding the lowest free address, in the same process",
    raw: [src.core],
  };
};

const storeRow = (src: Sources["etcd"] | Sources["kubernetes"], id: string) => src?.data.rows.find((r) => r.id === id);

const etcd: RowOf = (src) => {
  const [ours, bare] = [storeRow(src.etcd, "allocators-50"), storeRow(src.etcd, "bare-cas")];
  if (src.etcd === undefined || ours === undefined || bare === undefined) return undefined;
  const r = ours.seconds / bare.seconds;
  return {
    what: `etcd store: ${count(src.etcd.data.n)} allocations by 50 concurrent allocators, one pool`,
    ipamkit: s(ours.seconds),
    baseline: `${count(src.etcd.data.n)} bare CAS puts: ${s(bare.seconds)}`,
    ratio: ratio(r),
    target: target("≤ 3", r <= 3),
    fair: "the server's own limit for that many compare-and-swap writes, one after the other",
    raw: [src.etcd],
  };
};

const kubernetes: RowOf = (src) => {
  const [ours, bare] = [storeRow(src.kubernetes, "allocators-1"), storeRow(src.kubernetes, "bare-puts-store")];
  if (src.kubernetes === undefined || ours === undefined || bare === undefined) return undefined;
  return {
    what: `Kubernetes store: ${count(src.kubernetes.data.n)} allocations, 1 allocator, one pool (in-process API stand-in)`,
    ipamkit: s(ours.seconds),
    baseline: `${count(src.kubernetes.data.n)} bare PUTs as the store sends them: ${s(bare.seconds)}`,
    ratio: ratio(ours.seconds / bare.seconds),
    fair: "the store's own transport (one kept-alive connection), not client-node's default, which is twice as slow",
    raw: [src.kubernetes],
  };
};

const blockWalk: RowOf = (src) => {
  if (src.blockWalk === undefined) return undefined;
  const { oneByOne, readAhead } = src.blockWalk.data.meanRequests;
  return {
    what: `a node's second block on etcd, ${src.blockWalk.data.nodes} nodes at once: requests`,
    ipamkit: count(readAhead),
    baseline: `one read per claim: ${count(oneByOne)}`,
    ratio: ratio(readAhead / oneByOne),
    fair: "the same store with its batched reads hidden, alternated on fresh prefixes",
    raw: [src.blockWalk],
  };
};

const reconcilePlan: RowOf = (src) => {
  if (src.reconcile === undefined) return undefined;
  const { planning, lookups } = src.reconcile.data;
  return {
    what: `reconciler: plan ${count(planning.reservations)} reservations against as many pods, CPU`,
    ipamkit: ms(planning.cpuMs),
    baseline: `a bare pod lookup each: ${ms(lookups.cpuMs)}`,
    ratio: ratio(planning.cpuMs / lookups.cpuMs),
    target: target("≤ 1 s", planning.cpuMs <= 1000),
    fair: "the least any planner does: find each reservation's pod",
    raw: [src.reconcile],
  };
};

const powerCycle: RowOf = (src) => {
  const store = src.powerCycle?.data.stores.find((x) => x.store.includes("Kubernetes"));
  if (src.powerCycle === undefined || store === undefined) return undefined;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const [bulk, each] = [median(store.fullPass.bulk.requests), median(store.fullPass.readEach.requests)];
  return {
    what: `reconciler after a power-cycle (${count(store.fullPass.released)} orphans), Kubernetes stand-in: requests`,
    ipamkit: count(bulk),
    baseline: `a read each: ${count(each)}`,
    ratio: ratio(bulk / each),
    fair: "the same store with its bulk lists hidden, alternated on the same data",
    raw: [src.powerCycle],
  };
};

const STORE_NAMES: Record<string, string> = {
  "kube-apiserver": "the real kube-apiserver",
  kubernetes: "the Kubernetes stand-in",
  etcd: "etcd",
};

/** A full-size simulation's slowest phase against the no-op floor of the same run. */
const simSlowest =
  (store: string, limit?: number): RowOf =>
  (src) => {
    const run = src.sim === undefined ? undefined : runOf(src.sim.data, "ipamkit", store);
    const worst = run === undefined ? undefined : slowest(run);
    const floor = src.sim === undefined || run === undefined ? undefined : nodeFloor(src.sim.data, run.pods);
    if (src.sim === undefined || run === undefined || worst === undefined || floor === undefined) return undefined;
    const r = worst.seconds / floor.seconds;
    const every = run.phases.every((p) => p.seconds / floor.seconds <= (limit ?? Number.POSITIVE_INFINITY));
    return {
      what: `simulation, ${count(run.pods)} pods × ${run.networks} networks, ${run.nodes} hollow nodes, blocks of ${run.blockSize}, ${STORE_NAMES[store] ?? store}: slowest phase (${worst.phase})`,
      ipamkit: s(worst.seconds),
      baseline: `${count(floor.calls)} no-op Node processes: ${s(floor.seconds)} (a phase makes ${count(run.pods * run.networks)} calls)`,
      ratio: ratio(r),
      ...(limit === undefined ? {} : { target: target(`every phase ≤ ${limit}`, every) }),
      fair: "what any Node plugin's processes cost this machine at the same concurrency; the binary is native and cheaper",
      raw: [src.sim],
    };
  };

/**
 * Steady-state requests per ADD and per DEL (the re-create phase) on one store: on the real
 * kube-apiserver from the run beside Whereabouts (its requests in the same run are the baseline),
 * elsewhere from the full-size run (no baseline: the target alone).
 */
const simRequests =
  (store: string): RowOf =>
  (src) => {
    const file = store === "kube-apiserver" ? src.simWhereabouts : src.sim;
    const run = file === undefined ? undefined : runOf(file.data, "ipamkit", store);
    const steady = run === undefined ? undefined : phaseOf(run, RECREATE);
    const [add, del] = steady === undefined ? [] : [perCall(steady, "ADD"), perCall(steady, "DEL")];
    if (file === undefined || run === undefined || add === undefined || del === undefined) return undefined;
    const theirs = runOf(file.data, "whereabouts", store);
    const theirSteady = theirs === undefined ? undefined : phaseOf(theirs, RECREATE);
    const [tAdd, tDel] = theirSteady === undefined ? [] : [perCall(theirSteady, "ADD"), perCall(theirSteady, "DEL")];
    const unit = store === "etcd" ? "transactions and reads" : "requests";
    const both = tAdd !== undefined && tDel !== undefined;
    return {
      what: `${unit} per ADD / per DEL, steady state (re-create phase), ${STORE_NAMES[store] ?? store}, per-node blocks of ${run.blockSize}`,
      ipamkit: `${add.total.toFixed(2)} / ${del.total.toFixed(2)}`,
      baseline: both ? `Whereabouts v0.9.2: ${tAdd.total.toFixed(2)} / ${tDel.total.toFixed(2)}` : "—",
      ratio: both ? `${ratio(add.total / tAdd.total)} / ${ratio(del.total / tDel.total)}` : "—",
      target: target("≤ 3 / ≤ 2", add.total <= 3 && del.total <= 2),
      ...(both ? { fair: "the incumbent in the same run: same kube-apiserver, same pods, its requests counted by the server alike" } : {}),
      raw: [file],
    };
  };

/** The simulation beside Whereabouts: each phase both ran, ipamkit's seconds against Whereabouts'. */
const simBesideWhereabouts: RowOf = (src) => {
  const file = src.simWhereabouts;
  const [ours, theirs] =
    file === undefined ? [] : [runOf(file.data, "ipamkit", "kube-apiserver"), runOf(file.data, "whereabouts", "kube-apiserver")];
  if (file === undefined || ours === undefined || theirs === undefined) return undefined;
  const phases = [CREATE, RECREATE, DELETE].flatMap((name) => {
    const [a, b] = [phaseOf(ours, name), phaseOf(theirs, name)];
    return a === undefined || b === undefined ? [] : [{ a: a.seconds, b: b.seconds }];
  });
  const ratios = phases.map((p) => p.a / p.b);
  return {
    what: `simulation beside Whereabouts v0.9.2, ${count(ours.pods)} pods × ${ours.networks} networks, real kube-apiserver: create / re-create / delete`,
    ipamkit: `${phases.map((p) => p.a.toFixed(1)).join(" / ")} s`,
    baseline: `Whereabouts: ${phases.map((p) => p.b.toFixed(1)).join(" / ")} s`,
    ratio: ratios.map(ratio).join(" / "),
    target: target(
      "≤ 0.2",
      ratios.every((r) => r <= 0.2),
    ),
    fair: "its own binary in the same hollow nodes, same kube-apiserver, same pods, one after the other",
    raw: [file],
  };
};

/** What the simulations' audits and calls found wrong, over every phase of every file. */
const simProblems: RowOf = (src) => {
  const files = [src.sim, src.simWhereabouts].filter((f) => f !== undefined);
  if (files.length === 0) return undefined;
  const total = files.reduce((n, f) => n + problems(f.data), 0);
  return {
    what: "addresses held twice, lost or leaked, and calls failed, every simulation phase (Whereabouts' too)",
    ipamkit: count(total),
    baseline: "—",
    ratio: "—",
    target: target("0", total === 0),
    raw: files,
  };
};

const churn = (src: Sources, ipam: string) => src.nodeChurn?.data.summary.find((x) => x.ipam === ipam);

const nodeWave: RowOf = (src) => {
  const [ours, theirs] = [churn(src, "ipamkit"), churn(src, "whereabouts")];
  if (src.nodeChurn === undefined || ours === undefined || theirs === undefined) return undefined;
  return {
    what: `a wave of ${src.nodeChurn.data.wave} pods Running on a real node (kubelet + containerd)`,
    ipamkit: s(ours.waveMedianS),
    baseline: `Whereabouts: ${s(theirs.waveMedianS)}`,
    ratio: ratio(ours.waveMedianS / theirs.waveMedianS),
    fair: "its own binary in the same kubelet, rounds alternating which goes first",
    raw: [src.nodeChurn],
  };
};

const nodePod: RowOf = (src) => {
  const [ours, theirs] = [churn(src, "ipamkit"), churn(src, "whereabouts")];
  if (src.nodeChurn === undefined || ours === undefined || theirs === undefined) return undefined;
  return {
    what: "one pod to Running on a real node, median (p90)",
    ipamkit: `${s(ours.medianMs / 1000)} (${s(ours.p90Ms / 1000)})`,
    baseline: `Whereabouts: ${s(theirs.medianMs / 1000)} (${s(theirs.p90Ms / 1000)})`,
    ratio: `${ratio(ours.medianMs / theirs.medianMs)} (${ratio(ours.p90Ms / theirs.p90Ms)})`,
    target: target("≤ 1.0", ours.medianMs <= theirs.medianMs && ours.p90Ms <= theirs.p90Ms),
    fair: "the same",
    raw: [src.nodeChurn],
  };
};

const nodeFreed: RowOf = (src) => {
  const [ours, theirs] = [churn(src, "ipamkit"), churn(src, "whereabouts")];
  if (src.nodeChurn === undefined || ours === undefined || theirs === undefined) return undefined;
  return {
    what: `a wave of ${src.nodeChurn.data.wave} pods freed on a real node`,
    ipamkit: s(ours.freedMedianS),
    baseline: `Whereabouts: ${s(theirs.freedMedianS)}`,
    ratio: ratio(ours.freedMedianS / theirs.freedMedianS),
    fair: "the same",
    raw: [src.nodeChurn],
  };
};

/** The lead's real two-node cluster: pods moved, to Running, and what was freed (a slot, filled when the file is there). */
const clusterMove: RowOf = (src) => {
  const find = (ipam: string) => src.clusterMove?.data.summary.find((x) => x.ipam === ipam);
  const [ours, theirs] = [find("ipamkit"), find("whereabouts")];
  if (src.clusterMove === undefined || ours === undefined || theirs === undefined) return undefined;
  return {
    what: "pods moved on a real two-node cluster: to Running, median; dead sandboxes freed; live addresses freed",
    ipamkit: `${s(ours.toRunningMedianS)}; ${count(ours.deadFreed)} of ${count(ours.deadEntries)}; ${count(ours.freedWhileLive)}`,
    baseline: `Whereabouts: ${s(theirs.toRunningMedianS)}; ${count(theirs.deadFreed)} of ${count(theirs.deadEntries)}; ${count(theirs.freedWhileLive)}`,
    ratio: ratio(ours.toRunningMedianS / theirs.toRunningMedianS),
    target: target("≤ 1.0", ours.toRunningMedianS <= theirs.toRunningMedianS),
    fair: "its own binary on the same cluster",
    raw: [src.clusterMove],
  };
};

/** README's headline table, in order. */
export const README_ROWS: readonly RowOf[] = [
  interopAdd("agent", "one CNI ADD on a real kube-apiserver, through the agent"),
  interopAdd("direct", "the same, direct mode (a Node process per call, no agent)"),
  interopBurst,
  simBesideWhereabouts,
  simRequests("kube-apiserver"),
  cniRow(5000),
  cniRow(10),
  nodeWave,
  nodePod,
  clusterMove,
  simProblems,
];

/** BENCHMARKS.md's summary, in order. */
export const SUMMARY_ROWS: readonly RowOf[] = [
  interopAdd("agent", "one CNI ADD on a real kube-apiserver, through the agent"),
  interopAdd("direct", "the same, direct mode (a Node process per call, no agent)"),
  interopBurst,
  simBesideWhereabouts,
  simRequests("kube-apiserver"),
  simRequests("kubernetes"),
  simRequests("etcd"),
  simSlowest("kube-apiserver", 3),
  simSlowest("kubernetes"),
  simSlowest("etcd"),
  nodeWave,
  nodePod,
  nodeFreed,
  clusterMove,
  addVsNode,
  cniRow(10),
  cniRow(5000),
  core,
  etcd,
  kubernetes,
  blockWalk,
  reconcilePlan,
  powerCycle,
  simProblems,
];

/** The rows a list gives for these sources (those whose raw files are missing left out). */
export function rowsOf(list: readonly RowOf[], src: Sources): Row[] {
  return list.map((row) => row(src)).filter((row): row is Row => row !== undefined);
}
