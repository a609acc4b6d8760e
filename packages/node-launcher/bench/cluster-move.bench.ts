/**
 * The seed report on a real cluster, as a benchmark: the same StatefulSet (4 replicas, both NADs
 * written for Whereabouts) on the same two-node cluster with Multus, once with ipamkit (its chart;
 * the reconciler program watching, full pass every minute) and once with Whereabouts v0.9.2's own
 * binary and `ip-control-loop` (its install manifest; reconciler every minute), ROUNDS rounds
 * alternating which goes first. Node A loses power, the node lifecycle controller marks it
 * NotReady, its pods are force-deleted and reborn on node B; the reconcilers then run (a minute
 * and more); node A comes back and its runtime sends the late DELs. Measured per run:
 * - the time from the force-delete until every reborn pod runs with both networks attached;
 * - the dead sandboxes' entries freed (ipamkit: by the reconciler; Whereabouts rebinds them to the
 *   reborn pod at its ADD, by pod name);
 * - any address freed while live: a reborn pod's network-status address with no entry of that pod,
 *   held twice, or given to another pod — sampled every 2 s from the move to the end.
 * Run: pnpm --filter @ipamkit/node-launcher bench:cluster   (after pnpm build and test-infra/*\/build.sh)
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Cluster, startCluster } from "../src/cluster.js";
import { checkCluster } from "../src/cluster-checks.js";
import { createSetAndWait, forceDelete, scaleAndWait, setPods, waitForSet } from "../src/cluster-pods.js";
import { buildIpamkitImage } from "../src/image.js";
import { nodeCondition } from "../src/node-daemons.js";
import { sleep, until } from "../src/processes.js";
import { startReconcilerWatch, type WatchingReconciler } from "../src/reconciler-program.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const REPLICAS = 4;
const AFTER_MOVE_MS = 75_000; // more than one reconciler minute on both sides
const SET = "db";
type Ipam = "ipamkit" | "whereabouts";

interface Run {
  ipam: Ipam;
  moved: number;
  toRunningMs: number;
  deadEntries: number;
  deadFreed: number;
  freedWhileLive: string[];
  leftAfterDelete: number;
}

/** Samples the cluster until `ms` passed: every reborn pod's address must stay its own. */
async function watchLive(cluster: Cluster, ms: number, problems: Set<string>): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = await checkCluster(cluster);
    for (const p of [...r.statusWithoutEntry, ...r.heldTwice, ...r.statusTwice]) problems.add(p);
    await sleep(2_000);
  }
}

async function move(cluster: Cluster, ipam: Ipam): Promise<Run> {
  await createSetAndWait(cluster, SET, REPLICAS);
  const pods = await setPods(cluster, SET);
  const moved = pods.filter((p) => p.spec?.nodeName === "node-a").map((p) => p.metadata?.name ?? "");
  const dead = new Set(
    (await checkCluster(cluster)).allocations
      .filter((a) => moved.some((m) => a.podref.endsWith(`/${m}`)))
      .map((a) => `${a.id} ${a.address}`),
  );
  await cluster.node("node-a").powerOff();
  await until("node-a NotReady", 90_000, async () => (await nodeCondition(cluster.core, "node-a")) !== "True");
  const t0 = performance.now();
  await forceDelete(cluster, moved);
  await waitForSet(cluster, SET, REPLICAS, 300_000);
  const toRunningMs = performance.now() - t0;
  const problems = new Set<string>();
  await watchLive(cluster, AFTER_MOVE_MS, problems);
  await cluster.node("node-a").powerOn();
  await cluster.ready(180_000);
  await until("node-a's dead sandboxes removed", 180_000, () => cluster.node("node-a").deadSandboxes(cluster.namespace).length === 0);
  await watchLive(cluster, 10_000, problems);
  const held = new Set((await checkCluster(cluster)).allocations.map((a) => `${a.id} ${a.address}`));
  const deadFreed = [...dead].filter((d) => !held.has(d)).length;
  await scaleAndWait(cluster, SET, 0, 300_000);
  await sleep(AFTER_MOVE_MS);
  const left = await checkCluster(cluster);
  return {
    ipam,
    moved: moved.length,
    toRunningMs,
    deadEntries: dead.size,
    deadFreed,
    freedWhileLive: [...problems],
    leftAfterDelete: left.allocations.length + left.reservations.length,
  };
}

async function runOnce(ipam: Ipam, image: ReturnType<typeof buildIpamkitImage>): Promise<Run> {
  const cluster = await startCluster({ ipam, image, namespace: "bench" });
  let watching: WatchingReconciler | undefined;
  try {
    if (ipam === "ipamkit") watching = startReconcilerWatch(cluster.apiserver, "60s");
    return await move(cluster, ipam);
  } finally {
    await watching?.stop();
    await cluster.stop();
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  const image = buildIpamkitImage();
  const runs: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order: Ipam[] = round % 2 === 0 ? ["ipamkit", "whereabouts"] : ["whereabouts", "ipamkit"];
    for (const ipam of order) {
      const run = await runOnce(ipam, image);
      runs.push(run);
      console.log(
        `round ${round + 1} ${ipam}: moved ${run.moved}, to Running ${(run.toRunningMs / 1000).toFixed(1)} s, dead entries freed ${run.deadFreed}/${run.deadEntries}, freed while live ${run.freedWhileLive.length}, left ${run.leftAfterDelete}`,
      );
    }
  }
  const summary = (["ipamkit", "whereabouts"] as const).map((ipam) => {
    const rs = runs.filter((r) => r.ipam === ipam);
    return {
      ipam,
      runs: rs.length,
      moved: rs.reduce((n, r) => n + r.moved, 0),
      toRunningMedianS: Number((median(rs.map((r) => r.toRunningMs)) / 1000).toFixed(1)),
      toRunningS: rs.map((r) => Number((r.toRunningMs / 1000).toFixed(1))),
      deadEntries: rs.reduce((n, r) => n + r.deadEntries, 0),
      deadFreed: rs.reduce((n, r) => n + r.deadFreed, 0),
      freedWhileLive: rs.flatMap((r) => r.freedWhileLive),
      leftAfterDelete: rs.reduce((n, r) => n + r.leftAfterDelete, 0),
    };
  });
  console.log(
    "\n| IPAM | runs | pods moved | to Running across the move (median) | dead entries freed | freed while live | left after scale 0 |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const s of summary)
    console.log(
      `| ${s.ipam} | ${s.runs} | ${s.moved} | ${s.toRunningMedianS} s (${s.toRunningS.join(", ")}) | ${s.deadFreed} of ${s.deadEntries} | ${s.freedWhileLive.length} | ${s.leftAfterDelete} |`,
    );
  const [k, w] = summary;
  if (k && w)
    console.log(`\nipamkit / Whereabouts, to Running across the move (median): ${(k.toRunningMedianS / w.toRunningMedianS).toFixed(2)}`);
  writeFileSync(
    join(import.meta.dirname, "..", "..", "..", "bench", "results", "cluster-move.json"),
    `${JSON.stringify({ date: new Date().toISOString(), rounds: ROUNDS, replicas: REPLICAS, runs, summary }, null, 2)}\n`,
  );
}

await main();
