/**
 * The reconciler's costs, side by side with a baseline run in the same process:
 *  1. planning (pure): 100k reservations against 100k pods, CPU time — baseline: one Map lookup of
 *     the pod per reservation (the least any planner does);
 *  2. a full reconcile through the project's Kubernetes API test server (real HTTP, client-node):
 *     10k reservations in 10 pools (10 × /22), 9k with live pods, 1k orphaned — baseline: reading the
 *     10 pools and listing the pods once (the I/O a pass cannot avoid). Then a second pass.
 * Run: pnpm --filter @ipamkit/reconciler bench   (output: Markdown on stdout)
 */
import { cpus } from "node:os";
import { attachmentKey, type ObservedReservation, type PodFacts, Pool, parseCidr, planReconcile, type Reservation } from "@ipamkit/core";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { createKubernetesPodSource } from "../src/pod-source.js";
import { reconcileOnce } from "../src/reconcile.js";

const HOUR_AGO = new Date(Date.now() - 3_600_000).toISOString();
const NOW = new Date();

function cpuMs(run: () => void): { cpu: number; wall: number } {
  const c = process.cpuUsage();
  const t = performance.now();
  run();
  const d = process.cpuUsage(c);
  return { cpu: (d.user + d.system) / 1000, wall: performance.now() - t };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** 100 pools × 1000 reservations; every 10th reservation's pod is dead in one of five ways. */
function planningInput(n: number) {
  const reservations: ObservedReservation[] = [];
  const pods = new Map<string, PodFacts>();
  let orphans = 0;
  for (let i = 0; i < n; i++) {
    const poolIndex = Math.floor(i / 1000);
    const v6 = poolIndex % 4 === 3;
    const pool = { network: "", cidr: v6 ? `fd00:${poolIndex.toString(16)}::/64` : `10.${poolIndex}.0.0/22` };
    const offset = BigInt((i % 1000) + 1);
    const address = v6
      ? `fd00:${poolIndex.toString(16)}::${offset.toString(16)}`
      : `10.${poolIndex}.${Number(offset) >> 8}.${Number(offset) & 255}`;
    const podRef = `ns${i % 50}/pod-${i}`;
    const reservation: Reservation = {
      offset,
      key: attachmentKey({ containerId: `c${i}`, ifName: "net1" }),
      podRef,
      podUid: `uid-${i}`,
      createdAt: HOUR_AGO,
    };
    reservations.push({ pool, address, reservation });
    const pod: PodFacts = {
      namespace: `ns${i % 50}`,
      name: `pod-${i}`,
      uid: `uid-${i}`,
      phase: "Running",
      evictedByTaintManager: false,
      networkStatus: [
        { interface: "eth0", ips: ["10.244.0.1"], default: true },
        { interface: "net1", ips: [address] },
      ],
    };
    const fate = i % 10 === 9 ? Math.floor(i / 10) % 6 : -1;
    // fates 0–3 orphan the reservation (pod missing, reborn, finished, IP not listed); 4 is Pending (kept)
    const variants: (PodFacts | undefined)[] = [
      undefined,
      { ...pod, uid: "reborn" },
      { ...pod, phase: "Succeeded" },
      { ...pod, networkStatus: [{ interface: "net1", ips: ["10.255.255.1"] }] },
      { ...pod, phase: "Pending", networkStatus: [] },
    ];
    if (fate >= 0 && fate <= 3) orphans++;
    const facts = fate >= 0 && fate <= 4 ? variants[fate] : pod;
    if (facts !== undefined) pods.set(podRef, facts);
  }
  return { reservations, pods, orphans };
}

const rows: string[] = [];
const N = 100_000;
const input = planningInput(N);
let released = 0;
const plan = () => {
  released = planReconcile({ reservations: input.reservations, pods: input.pods, now: NOW, graceMs: 300_000 }).filter(
    (v) => v.release,
  ).length;
};
const lookups = () => {
  let found = 0;
  for (const o of input.reservations) if (input.pods.get(o.reservation.podRef ?? "") !== undefined) found++;
  if (found < 0) throw new Error("unreachable");
};
plan();
lookups();
const planRuns = Array.from({ length: 5 }, () => cpuMs(plan));
const baseRuns = Array.from({ length: 5 }, () => cpuMs(lookups));
if (released !== input.orphans) throw new Error(`planner released ${released}, expected ${input.orphans}`);
const planCpu = median(planRuns.map((r) => r.cpu));
const baseCpu = median(baseRuns.map((r) => r.cpu));
rows.push(
  `| plan 100k reservations × 100k pods (pure) | ${planCpu.toFixed(0)} ms CPU | ${median(planRuns.map((r) => r.wall)).toFixed(0)} ms | ${(planCpu / baseCpu).toFixed(1)}× (baseline ${baseCpu.toFixed(1)} ms: one pod lookup each) | ${released} of 100000 |`,
);

// 2. through the test server
const server = await startKubeTestServer({ port: 0 });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(server.kubeconfig({ namespace: "kube-system" }));
const store = createKubernetesStore({ kubeconfig: kubeConfig, whereaboutsCompatible: false });
const core = kubeConfig.makeApiClient(CoreV1Api);
try {
  const POOLS = 10;
  const PER = 1000;
  for (let p = 0; p < POOLS; p++) {
    const cidr = parseCidr(`10.${100 + p}.0.0/22`);
    const reservations: Reservation[] = [];
    for (let i = 0; i < PER; i++) {
      const n = p * PER + i;
      reservations.push({
        offset: BigInt(i + 1),
        key: attachmentKey({ containerId: `c${n}`, ifName: "net1" }),
        podRef: `bench/pod-${n}`,
        podUid: `uid-${n}`,
        createdAt: HOUR_AGO,
      });
    }
    await store.writePool({ network: "", cidr: cidr.text }, Pool.fromReservations(cidr, reservations), undefined);
  }
  // pods for 9 of every 10 reservations, created in parallel batches (UIDs are the server's: record them)
  const live = Array.from({ length: POOLS * PER }, (_, n) => n).filter((n) => n % 10 !== 9);
  for (let i = 0; i < live.length; i += 100) {
    await Promise.all(
      live.slice(i, i + 100).map((n) =>
        core.createNamespacedPod({
          namespace: "bench",
          body: { metadata: { name: `pod-${n}` }, spec: { containers: [{ name: "a", image: "i" }] } },
        }),
      ),
    );
  }
  // the reservations were written with made-up UIDs: reconcile would call them reborn. Re-write them with the real ones.
  const uids = new Map<string, string>();
  for (const [ref, pod] of await createKubernetesPodSource({ kubeConfig }).list()) uids.set(ref, pod.uid);
  for (let p = 0; p < POOLS; p++) {
    const ref = { network: "", cidr: `10.${100 + p}.0.0/22` };
    const stored = await store.readPool(ref);
    if (stored === undefined) throw new Error("pool missing");
    const fixed = stored.pool.reservations().map((r) => ({ ...r, podUid: uids.get(r.podRef ?? "") ?? r.podUid }));
    await store.writePool(ref, Pool.fromReservations(stored.pool.cidr, fixed), stored.version);
  }
  const pods = createKubernetesPodSource({ kubeConfig, pageSize: 500 });
  const timed = async <T>(run: () => Promise<T>) => {
    const before = server.stats().requests;
    const c = process.cpuUsage();
    const t = performance.now();
    const value = await run();
    const d = process.cpuUsage(c);
    return { value, wall: performance.now() - t, cpu: (d.user + d.system) / 1000, requests: server.stats().requests - before };
  };
  const base = await timed(async () => {
    for (const ref of await store.listPools()) await store.readPool(ref);
    return (await pods.list()).size;
  });
  const first = await timed(() => reconcileOnce({ store, pods }));
  const second = await timed(() => reconcileOnce({ store, pods }));
  if (first.value.released.length !== 1000) throw new Error(`released ${first.value.released.length}, expected 1000`);
  if (second.value.released.length !== 0) throw new Error("second pass released something");
  const row = (name: string, r: { wall: number; cpu: number; requests: number }, note: string) =>
    rows.push(
      `| ${name} | ${r.cpu.toFixed(0)} ms CPU | ${r.wall.toFixed(0)} ms | ${(r.wall / base.wall).toFixed(1)}× (baseline ${base.wall.toFixed(0)} ms: read 10 pools + list ${base.value} pods) | ${note}, ${r.requests} HTTP requests |`,
    );
  row("full reconcile, 10k reservations (9k live pods, 1k orphaned), test server", first, `${first.value.released.length} released`);
  row("second pass (nothing to release)", second, "0 released");
  pods.close();
} finally {
  await store.close();
  await server.close();
}

console.log(`# reconciler bench (pnpm --filter @ipamkit/reconciler bench)\n`);
console.log("| case | CPU (test process) | wall | vs baseline | result |\n|---|---:|---:|---|---|");
for (const r of rows) console.log(r);
console.log(
  `\n${cpus()[0]?.model ?? "cpu"} × ${cpus().length}, node ${process.version}, ${new Date().toISOString()}; the test server runs in the same process, so its CPU is included in the reconcile rows.`,
);
