import { existsSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { rawEnvelope } from "@ipamkit/bench-figures";
import { etcdBinary } from "@ipamkit/etcd-launcher";
import { positiveInteger } from "./cli.js";
import { DEFAULT_AGENTS_PER_PROCESS, nodesLabel, openSimStore, type StoreKind, startCluster } from "./cluster.js";
import { NATIVE_NOOP, NODE_NOOP, processFloor } from "./cni.js";
import type { CpuParts } from "./cpu.js";
import { RECONCILER, type ReconcilerMode, reconcilerFor } from "./reconciler-run.js";
import { perCallText, requestsText } from "./requests.js";
import type { SimResultFile, SimRun } from "./result-file.js";
import { type PhaseResult, runScenario } from "./scenario.js";
import { type IpamKind, simIpam } from "./sim-ipam.js";
import { type Spawner, startSpawner } from "./spawner.js";
import { lineChart, type Series } from "./svg.js";
import { sweep } from "./sweep.js";

/**
 * pnpm sim — a cluster played against a real store through the real CNI binary and a real
 * node-local agent per simulated node. See README.md.
 */
const { values } = parseArgs({
  options: {
    store: { type: "string", default: "etcd,kubernetes,file" },
    pods: { type: "string", default: "1000" },
    nodes: { type: "string", default: "100" },
    networks: { type: "string", default: "1,10" },
    concurrency: { type: "string", default: "32" },
    /** native: CNI processes started with posix_spawn by src/launcher.c, as Go runtimes start them; node: Node's spawn. */
    spawner: { type: "string", default: "native" },
    /** Per-node blocks of this many addresses (node_block_size) on the shared stores (etcd, kubernetes, kube-apiserver). */
    "node-block-size": { type: "string" },
    /** Nodes whose agents one process hosts (hollow nodes, src/hollow-nodes.ts; 1: the product agent once per node, as deployed). */
    "agents-per-process": { type: "string", default: String(DEFAULT_AGENTS_PER_PROCESS) },
    /** program: the power-cycle's reconciler pass is examples/cron-reconciler --once, in its own process; in-process: inside this one. */
    reconciler: { type: "string", default: "program" },
    /**
     * The IPAMs the nodes' runtimes call, one after the other on the same cluster: ipamkit (its
     * binary and agents), whereabouts (Whereabouts v0.9.2's binary; --store kube-apiserver only,
     * without the power-cycle).
     */
    ipam: { type: "string", default: "ipamkit" },
    out: { type: "string" },
    /** Also write the raw result as JSON (src/result-file.ts), with the commit measured. */
    json: { type: "string" },
    /** Also measure ADD latency against concurrency and draw it (SVG). */
    svg: { type: "string" },
    "sweep-levels": { type: "string", default: "1,4,16,32,64" },
    "sweep-calls": { type: "string", default: "200" },
  },
});
const stores = (values.store ?? "").split(",") as StoreKind[];
const unknownStore = stores.find((s) => !["etcd", "kubernetes", "kube-apiserver", "file"].includes(s));
if (unknownStore !== undefined) {
  process.stderr.write(
    `sim: --store takes etcd, kubernetes (the in-process API stand-in), kube-apiserver (the real one) or file, not ${unknownStore}\n`,
  );
  process.exit(2);
}
const ipams = (values.ipam ?? "").split(",") as IpamKind[];
const unknownIpam = ipams.find((i) => i !== "ipamkit" && i !== "whereabouts");
if (unknownIpam !== undefined) {
  process.stderr.write(`sim: --ipam takes ipamkit or whereabouts, not ${unknownIpam}\n`);
  process.exit(2);
}
if (ipams.includes("whereabouts") && stores.some((s) => s !== "kube-apiserver")) {
  process.stderr.write("sim: --ipam whereabouts runs on the real kube-apiserver only (--store kube-apiserver)\n");
  process.exit(2);
}
const networksList = (values.networks ?? "1").split(",").map(Number);
const pods = Number(values.pods);
const nodes = Number(values.nodes);
const concurrency = Number(values.concurrency);
const agentsPerProcess = positiveInteger("sim", "agents-per-process", values["agents-per-process"]);
const reconcilerMode = values.reconciler as ReconcilerMode;
if (reconcilerMode !== "program" && reconcilerMode !== "in-process") {
  process.stderr.write(`sim: --reconciler is program or in-process, not ${values.reconciler}\n`);
  process.exit(2);
}
if (reconcilerMode === "program" && !existsSync(RECONCILER)) {
  process.stderr.write(`sim: ${RECONCILER} is not built (pnpm build)\n`);
  process.exit(1);
}
if (values.spawner !== "native" && values.spawner !== "node") {
  process.stderr.write(`sim: --spawner is native or node, not ${values.spawner}\n`);
  process.exit(2);
}
let spawner: Spawner;
try {
  spawner = startSpawner(values.spawner);
} catch (error) {
  process.stderr.write(`sim: ${(error as Error).message}\n`);
  process.exit(1);
}

const envelope = rawEnvelope("cluster-sim", `pnpm sim ${process.argv.slice(2).join(" ")}`);
const lines = [
  "| IPAM | store | nodes | blocks | networks/pod | phase | s | ADDs | ADD p50 ms | ADD p99 ms | failed | conflicts | IPs held twice | lost | leaked | reconciler released | CPU s: sim / CNI / agents / etcd of machine |",
  "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
];
const runs: SimRun[] = [];
let bad = 0;
/** Requests to the test API server per Kubernetes phase, printed after the table. */
const requestLines: string[] = [];
const cpuCell = (c: CpuParts) => `${[c.harness, c.cni, c.agents, c.store].map((s) => s.toFixed(0)).join(" / ")} of ${c.machine.toFixed(0)}`;
// What the machine alone costs: as many no-op processes as a phase's CNI calls — Node ones (a Node
// plugin's start) and native ones (any native plugin's start; the binary run here is native).
const floorConf = JSON.stringify({
  cniVersion: "1.1.0",
  name: "net-0",
  type: "macvlan",
  ipam: { type: "ipamkit", range: "10.100.0.0/20" },
});
// a missing etcd is said before minutes of floor measurement, not after
if (stores.includes("etcd"))
  try {
    etcdBinary();
  } catch (error) {
    process.stderr.write(`sim: ${(error as Error).message}\n`);
    process.exit(1);
  }
const floorParts: string[] = [];
const floor: { label: string; calls: number; seconds: number }[] = [];
// a pod's calls (one per pod, two per pod) for both; native ones also as many as a phase of
// several networks makes (pods × networks: the binary run here is native, and they are cheap)
const manyCalls = [...new Set(networksList.filter((n) => n > 2).map((n) => pods * n))];
for (const noop of [NODE_NOOP, NATIVE_NOOP])
  for (const calls of [pods, 2 * pods, ...(noop === NATIVE_NOOP ? manyCalls : [])]) {
    const seconds = await processFloor({ calls, concurrency, conf: floorConf, noop, spawner });
    floorParts.push(`${calls} ${noop.label}: ${seconds.toFixed(1)} s`);
    floor.push({ label: noop.label, calls, seconds });
  }
const floorLine = floorParts.join("; ");
process.stderr.write(`sim: floor (${concurrency} at once, the ${spawner.kind} spawner): ${floorLine}\n`);
for (const kind of stores) {
  for (const networks of networksList) {
    const nodeCount = kind === "file" ? 1 : nodes;
    const blockSize = kind === "file" || values["node-block-size"] === undefined ? undefined : Number(values["node-block-size"]);
    const cluster = await startCluster(kind, nodeCount, {
      spawner,
      agentsPerProcess,
      ...(blockSize === undefined ? {} : { nodeBlockSize: blockSize }),
    });
    const nodesCell = nodesLabel(nodeCount, agentsPerProcess);
    const store = await openSimStore(cluster);
    try {
      await cluster.startAgents(8);
      for (const ipamKind of ipams) {
        const ipam = simIpam(cluster, ipamKind);
        const blocks = ipamKind === "ipamkit" ? blockSize : undefined;
        process.stderr.write(
          `sim: ${ipam.label} on ${kind}, ${nodeCount} nodes, ${pods} pods × ${networks} networks, ${concurrency} CNI calls at once${blocks === undefined ? "" : `, blocks of ${blocks}`}\n`,
        );
        const reconcile = reconcilerFor(reconcilerMode, cluster, store);
        const results: PhaseResult[] = await runScenario(cluster, {
          pods,
          networks,
          concurrency,
          reconcile,
          ipam,
          powerCycle: ipamKind === "ipamkit",
        });
        runs.push({
          ipam: ipamKind,
          ipamLabel: ipam.label,
          store: kind,
          nodes: nodeCount,
          agentsPerProcess,
          blockSize: blocks ?? null,
          pods,
          networks,
          phases: results,
        });
        for (const r of results) {
          const leaked =
            r.leakedBeforeReconcile === undefined ? `${r.audit.leaked}` : `${r.audit.leaked} (${r.leakedBeforeReconcile} before)`;
          const where =
            r.reconcilerCpu === undefined ? " in the simulation's process" : ` as a program, ${r.reconcilerCpu.toFixed(1)} CPU-s`;
          const parts = Object.entries(r.parts ?? {}).map(([part, s]) => `${part} ${s.toFixed(1)} s${part === "reconcile" ? where : ""}`);
          if (r.auditing !== undefined) parts.push(`the audit before the reconcile ${r.auditing.toFixed(1)} s, not counted`);
          const phaseName = parts.length === 0 ? r.phase : `${r.phase} (${parts.join(", ")})`;
          // the agents' and the stand-in's conflict counters: Whereabouts has neither
          const conflicts = ipamKind === "ipamkit" ? `${r.conflicts}` : "-";
          const line = `| ${ipam.label} | ${kind} | ${nodesCell} | ${blocks ?? "-"} | ${networks} | ${phaseName} | ${r.seconds.toFixed(1)} | ${r.adds} | ${r.addP50.toFixed(0)} | ${r.addP99.toFixed(0)} | ${r.failed} | ${conflicts} | ${r.audit.heldTwice} | ${r.audit.lost} | ${leaked} | ${r.reconciled ?? "-"} | ${cpuCell(r.cpu)} |`;
          lines.push(line);
          process.stderr.write(`${line}\n`);
          if (r.audit.heldTwice + r.audit.lost + r.audit.leaked + r.failed > 0) bad++;
          if (r.requests !== undefined) {
            requestLines.push(
              `- ${ipam.label} on ${kind}, ${networks} network${networks === 1 ? "" : "s"}, ${r.phase}: ${requestsText(r.requests)}`,
            );
            for (const [verb, s] of Object.entries(r.steps ?? {}))
              if (s.calls > 0) requestLines.push(`  - the IPAM's requests: ${perCallText(s.requests, s.calls, verb)}`);
          }
        }
      }
    } finally {
      await store.close();
      await cluster.close();
    }
  }
}
if (values.svg !== undefined) {
  const levels = (values["sweep-levels"] ?? "1").split(",").map(Number);
  const calls = Number(values["sweep-calls"]);
  const series: Series[] = [];
  const colors: Record<string, [string, string]> = {
    etcd: ["#1f77b4", "#aec7e8"],
    kubernetes: ["#d62728", "#ff9896"],
    file: ["#2ca02c", "#98df8a"],
  };
  const sweepLines = ["| store | concurrency | ADD p50 ms | ADD p99 ms |", "|---|---:|---:|---:|"];
  for (const kind of stores) {
    const cluster = await startCluster(kind, kind === "file" ? 1 : Math.min(nodes, 10), { spawner, agentsPerProcess });
    try {
      await cluster.startAgents(8);
      const points = await sweep(cluster, levels, calls);
      const [strong, light] = colors[kind] ?? ["black", "gray"];
      series.push({ name: `${kind} p50`, color: strong, points: points.map((p) => ({ x: p.concurrency, y: p.p50 })) });
      series.push({ name: `${kind} p99`, color: light, points: points.map((p) => ({ x: p.concurrency, y: p.p99 })) });
      for (const p of points) sweepLines.push(`| ${kind} | ${p.concurrency} | ${p.p50.toFixed(0)} | ${p.p99.toFixed(0)} |`);
    } finally {
      await cluster.close();
    }
  }
  writeFileSync(
    values.svg,
    lineChart({
      title: `ADD latency through the binary + node-local agents (${calls} ADDs per point)`,
      xLabel: "CNI processes at once",
      yLabel: "ms",
      series,
    }),
  );
  lines.push("", ...sweepLines);
}
await spawner.close();
if (requestLines.length > 0)
  lines.push(
    "",
    "Requests the store's server answered per phase (agents, reconciler and the simulation's pods; each phase's closing audit excluded): the stand-in's counters, the real kube-apiserver's apiserver_request_total, etcd's handled RPCs. Per call, the IPAM's alone (the simulation's pods left out) over the phase's DELs, then over its ADDs:",
    "",
    ...requestLines,
  );
const { commit, dirty } = envelope;
const date = new Date().toISOString();
const text = `${lines.join("\n")}\n\nFloor of this machine (${concurrency} at once, the ${spawner.kind} spawner): ${floorLine}.\n${concurrency} CNI processes at most at once, started by the ${spawner.kind} spawner, node ${process.version}, ${date}, commit ${commit}${dirty ? " with local changes" : ""}\n`;
process.stdout.write(text);
if (values.out !== undefined) writeFileSync(values.out, text);
if (values.json !== undefined) {
  const result: SimResultFile = {
    ...envelope,
    bench: "cluster-sim",
    date,
    argv: process.argv.slice(2),
    concurrency,
    spawner: spawner.kind,
    floor,
    runs,
  };
  writeFileSync(values.json, `${JSON.stringify(result, null, 1)}\n`);
}
process.exitCode = bad === 0 ? 0 : 1;
