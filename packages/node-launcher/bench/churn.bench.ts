/**
 * Scenario 5 of the real-node suite as a benchmark: POD_COUNT pods created and deleted in waves of
 * WAVE on one real node (containerd 2.4 + kubelet 1.37, bridge network), once with ipamkit (its
 * agent as the chart's pod, from its image) and once with Whereabouts v0.9.2's binary in its place,
 * on the same real kube-apiserver, ROUNDS rounds alternating which goes first. Per pod: the time
 * from its create request to the watch event that shows it Running with an IP. Per wave: the time
 * from the delete requests until every one of its addresses is free again. After every wave the
 * pools are audited through the API server: no address twice, no key with two, and after the
 * deletes no entry and no ORIP left.
 * Run: pnpm --filter @ipamkit/node-launcher bench:churn   (after pnpm build and test-infra/*\/build.sh)
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { buildIpamkitImage, type IpamkitImage } from "../src/image.js";
import { readIpamState } from "../src/ipam-state.js";
import { type RealNode, startNode } from "../src/launcher.js";
import { podOnNode } from "../src/pods.js";
import { until } from "../src/processes.js";

const POD_COUNT = Number(process.env.BENCH_PODS ?? 100);
const WAVE = Number(process.env.BENCH_WAVE ?? 25);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const NS = "default";
type Ipam = "ipamkit" | "whereabouts";

interface Run {
  ipam: Ipam;
  toRunning: number[];
  waveRunning: number[];
  waveFreed: number[];
  problems: string[];
}

const quantile = (xs: readonly number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? Number.NaN;

/** Watches the namespace's pods; `runningAt(name)` resolves when the pod is first seen Running with an IP. */
async function watchRunning(kubeConfig: KubeConfig) {
  const seen = new Map<string, number>();
  const waiters = new Map<string, (t: number) => void>();
  const request = await new Watch(kubeConfig).watch(
    `/api/v1/namespaces/${NS}/pods`,
    {},
    (_type: string, pod: V1Pod) => {
      const name = pod.metadata?.name ?? "";
      if (pod.status?.phase !== "Running" || !pod.status.podIP || seen.has(name)) return;
      const t = performance.now();
      seen.set(name, t);
      waiters.get(name)?.(t);
    },
    () => undefined,
  );
  return {
    /** resolves when the pod is seen Running; rejects after 120 s (the watch may have ended) */
    runningAt: (name: string) =>
      new Promise<number>((resolve, reject) => {
        const t = seen.get(name);
        if (t !== undefined) return resolve(t);
        const timer = setTimeout(() => reject(new Error(`pod ${name} not Running after 120 s`)), 120_000);
        waiters.set(name, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      }),
    forget: (name: string) => seen.delete(name),
    stop: () => request.abort(),
  };
}

async function audit(kubeConfig: KubeConfig, run: Run, label: string, empty: boolean): Promise<void> {
  const state = await readIpamState(kubeConfig);
  if (state.heldTwice.length > 0) run.problems.push(`${label}: held twice ${state.heldTwice.join(", ")}`);
  if (state.keysWithTwo.length > 0) run.problems.push(`${label}: keys with two ${state.keysWithTwo.join(", ")}`);
  if (empty && (state.allocations.length > 0 || state.reservations.length > 0))
    run.problems.push(`${label}: left ${state.allocations.length} entries, ${state.reservations.length} ORIPs`);
}

async function churn(node: RealNode, kubeConfig: KubeConfig, ipam: Ipam): Promise<Run> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const run: Run = { ipam, toRunning: [], waveRunning: [], waveFreed: [], problems: [] };
  const watch = await watchRunning(kubeConfig);
  try {
    for (let first = 0; first < POD_COUNT; first += WAVE) {
      const names = Array.from({ length: Math.min(WAVE, POD_COUNT - first) }, (_, i) => `churn-${first + i}`);
      const started = performance.now();
      const times = await Promise.all(
        names.map(async (name) => {
          const t0 = performance.now();
          await core.createNamespacedPod({ namespace: NS, body: podOnNode(node, name, NS) });
          return (await watch.runningAt(name)) - t0;
        }),
      );
      run.toRunning.push(...times);
      run.waveRunning.push(performance.now() - started);
      await audit(kubeConfig, run, `${ipam} wave ${first / WAVE + 1} running`, false);
      const deleting = performance.now();
      await Promise.all(names.map((name) => core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 1 })));
      await until(`wave ${first / WAVE + 1}'s addresses free`, 180_000, async () => {
        const pods = await core.listNamespacedPod({ namespace: NS });
        return pods.items.length === 0 && (await readIpamState(kubeConfig)).allocations.length === 0;
      });
      run.waveFreed.push(performance.now() - deleting);
      for (const name of names) watch.forget(name);
      await audit(kubeConfig, run, `${ipam} wave ${first / WAVE + 1} deleted`, true);
    }
  } finally {
    watch.stop();
  }
  return run;
}

/** ROUNDS rounds on one API server, alternating which IPAM goes first; one fresh node per run */
async function runRounds(apiserver: KubeApiserver, image: IpamkitImage): Promise<Run[]> {
  const runs: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = (round % 2 === 0 ? ["ipamkit", "whereabouts"] : ["whereabouts", "ipamkit"]).filter(
      (ipam) => process.env.BENCH_ONLY === undefined || ipam === process.env.BENCH_ONLY,
    ) as Ipam[];
    for (const ipam of order) {
      const subnet = ipam === "ipamkit" ? 86 : 85;
      const node = await startNode({
        apiserver,
        image,
        ipam,
        range: `10.${subnet}.0.0/24`,
        gateway: `10.${subnet}.0.1`,
        network: `churn-${ipam}`,
      });
      try {
        const run = await churn(node, apiserver.kubeConfig, ipam);
        runs.push(run);
        console.log(
          `round ${round + 1} ${ipam}: to Running median ${quantile(run.toRunning, 0.5).toFixed(0)} ms, p90 ${quantile(run.toRunning, 0.9).toFixed(0)} ms; ` +
            `waves ${run.waveRunning.map((t) => (t / 1000).toFixed(1)).join("/")} s; freed ${run.waveFreed.map((t) => (t / 1000).toFixed(1)).join("/")} s; problems ${run.problems.length}`,
        );
      } finally {
        await node.stop();
      }
    }
  }
  return runs;
}

/** per IPAM: time to Running (median, p90, max), wave medians and the audit's problems */
function summarize(runs: readonly Run[]) {
  const of = (ipam: Ipam) => runs.filter((r) => r.ipam === ipam);
  return (["ipamkit", "whereabouts"] as const).map((ipam) => {
    const rs = of(ipam);
    const all = rs.flatMap((r) => r.toRunning);
    return {
      ipam,
      pods: all.length,
      medianMs: Math.round(quantile(all, 0.5)),
      p90Ms: Math.round(quantile(all, 0.9)),
      maxMs: Math.round(Math.max(...all)),
      waveMedianS: Number(
        (
          quantile(
            rs.flatMap((r) => r.waveRunning),
            0.5,
          ) / 1000
        ).toFixed(2),
      ),
      freedMedianS: Number(
        (
          quantile(
            rs.flatMap((r) => r.waveFreed),
            0.5,
          ) / 1000
        ).toFixed(2),
      ),
      problems: rs.flatMap((r) => r.problems),
    };
  });
}

/** prints the summary as a Markdown table and writes it to bench/results/node-churn.json */
function report(summary: ReturnType<typeof summarize>): void {
  const [k, w] = summary;
  console.log(
    "\n| IPAM | pods | to Running median | p90 | max | wave of %d Running (median) | wave freed (median) | problems |".replace(
      "%d",
      String(WAVE),
    ),
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const s of summary)
    console.log(
      `| ${s.ipam} | ${s.pods} | ${s.medianMs} ms | ${s.p90Ms} ms | ${s.maxMs} ms | ${s.waveMedianS} s | ${s.freedMedianS} s | ${s.problems.length} |`,
    );
  if (k && w)
    console.log(
      `\nipamkit / Whereabouts, to Running median: ${(k.medianMs / w.medianMs).toFixed(2)}; p90: ${(k.p90Ms / w.p90Ms).toFixed(2)}`,
    );
  for (const s of summary) for (const p of s.problems) console.log(`problem (${s.ipam}): ${p}`);
  const out = join(import.meta.dirname, "..", "..", "..", "bench", "results", "node-churn.json");
  writeFileSync(
    out,
    `${JSON.stringify({ date: new Date().toISOString(), pods: POD_COUNT, wave: WAVE, rounds: ROUNDS, summary }, null, 2)}\n`,
  );
  console.log(`\nraw summary: ${out}`);
}

async function main(): Promise<void> {
  const apiserver = await startKubeApiserver();
  const image = buildIpamkitImage();
  let runs: Run[];
  try {
    runs = await runRounds(apiserver, image);
  } finally {
    await apiserver.stop();
  }
  report(summarize(runs));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
