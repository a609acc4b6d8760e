/**
 * The reconcile after a power-cycle, on one etcd (Debian etcd-server, data dir on tmpfs), at the
 * simulation's scale: NODES nodes with per-node blocks of 16, NETWORKS networks (a /20 each), PODS
 * StatefulSet pods. Every pod is placed twice — its dead sandbox, then its reborn one under the
 * same name with a new UID — so each node holds two blocks per network, the pods list only the
 * reborn sandboxes' addresses, and half the reservations are orphans.
 *
 * 1. Observing the pools (observePools: list, then read every pool), pools read one at a time (as
 *    before 2026-12-05) against `concurrency` at a time (reconcileOnce's default), alternated, on
 *    the same data; medians. Each run through a store client of its own, opened for it: a
 *    reconciler is a process of its own, whose store has read nothing yet.
 * 2. One full reconcileOnce (default concurrency) on that data, through a fresh client too: it must
 *    release exactly the dead sandboxes' reservations; its time and CPU.
 * Run: pnpm --filter @ipamkit/reconciler bench:power-cycle   (BENCH_ROUNDS=5 by default)
 */
import {
  attachmentKey,
  createNodeBlockIpam,
  formatIp,
  type IpamStore,
  type PodFacts,
  parseRange,
  withAffinityCache,
  withOwnClaimMemory,
  withPoolRecall,
} from "@ipamkit/core";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { observePools } from "../src/observe.js";
import type { PodSource } from "../src/pod-source.js";
import { DEFAULT_CONCURRENCY, reconcileOnce } from "../src/reconcile.js";
import { measure, median } from "./measure.js";

const NODES = 100;
const NETWORKS = 10;
const PODS = 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const networkName = (k: number) => `net-${k}`;
const ranges = Array.from({ length: NETWORKS }, (_, k) => parseRange({ range: `10.${100 + k}.0.0/20` }));

/** Places every pod's NETWORKS attachments for one generation, all nodes at once, each node's pods in turn. */
async function place(store: IpamStore, generation: number): Promise<Map<string, string[]>> {
  const ips = new Map<string, string[]>();
  await Promise.all(
    Array.from({ length: NODES }, async (_, n) => {
      // a node's agent as started afresh (its own memories over the shared client), as after a power-cycle
      const stack = withPoolRecall(withOwnClaimMemory(withAffinityCache(store, { soleWriter: () => true })));
      const ipam = createNodeBlockIpam({ store: stack, node: `node-${n}`, blockSize: 16 });
      for (let pod = n; pod < PODS; pod += NODES) {
        const addresses: string[] = [];
        for (let k = 0; k < NETWORKS; k++) {
          const [assigned] = await ipam.allocate({
            network: networkName(k),
            ranges: [ranges[k] as (typeof ranges)[number]],
            key: attachmentKey({ containerId: `sandbox-${generation}-${pod}`, ifName: `net${k + 1}` }),
            podRef: `sim/sts-${pod}`,
            podUid: `uid-${generation}-${pod}`,
          });
          if (assigned === undefined) throw new Error(`no address for sts-${pod} net${k + 1}`);
          addresses.push(formatIp(assigned.address));
        }
        ips.set(`sim/sts-${pod}`, addresses);
      }
    }),
  );
  return ips;
}

/** The pods as the API lists them after the power-cycle: the reborn ones, Running, their addresses in network-status. */
function podSource(reborn: Map<string, string[]>, generation: number): PodSource {
  const pods = new Map<string, PodFacts>();
  for (const [podRef, addresses] of reborn) {
    const name = podRef.slice("sim/".length);
    pods.set(podRef, {
      namespace: "sim",
      name,
      uid: `uid-${generation}-${name.slice("sts-".length)}`,
      phase: "Running",
      evictedByTaintManager: false,
      networkStatus: addresses.map((ip, k) => ({ name: `sim/${networkName(k)}`, interface: `net${k + 1}`, ips: [ip] })),
    });
  }
  return { list: async () => new Map(pods), get: async (ns, name) => pods.get(`${ns}/${name}`), close() {} };
}

/** One call's value, wall and CPU time, in seconds. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; cpu: number }> {
  const { value, wall, cpu } = await measure(work);
  return { value, seconds: wall / 1000, cpu: cpu / 1000 };
}

const etcd = await startEtcd();
const store = createEtcdStore({ endpoints: [etcd.endpoint] });

/** One observation through a client opened for it (its cache empty, as in a reconciler's own process). */
async function observeCold(concurrency: number) {
  const cold = createEtcdStore({ endpoints: [etcd.endpoint] });
  try {
    return await observePools(cold, { concurrency });
  } finally {
    await cold.close();
  }
}
try {
  const setup = await timed(async () => {
    await place(store, 1);
    return place(store, 2);
  });
  const reborn = setup.value;
  console.log(`setup: ${2 * PODS * NETWORKS} ADDs on ${NODES} nodes in ${setup.seconds.toFixed(1)} s`);

  const observeRuns: Record<string, { seconds: number[]; cpu: number[]; pools: number; reservations: number }> = {};
  const variants = [1, DEFAULT_CONCURRENCY];
  // one uncounted warm-up each: the first pass of a process pays V8's compiling
  for (const c of variants) await observeCold(c);
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of round % 2 === 0 ? variants : [...variants].reverse()) {
      const run = await timed(() => observeCold(c));
      const row = observeRuns[c] ?? { seconds: [], cpu: [], pools: 0, reservations: 0 };
      observeRuns[c] = row;
      row.seconds.push(run.seconds);
      row.cpu.push(run.cpu);
      row.pools = run.value.pools;
      row.reservations = run.value.reservations.length;
    }
  }

  const fresh = createEtcdStore({ endpoints: [etcd.endpoint] });
  const reconcile = await timed(() => reconcileOnce({ store: fresh, pods: podSource(reborn, 2), graceMs: 0 })).finally(() => fresh.close());
  const report = reconcile.value;
  const deadReleased = report.released.filter((v) => v.observed.reservation.podUid?.startsWith("uid-1-")).length;
  if (report.failed.length > 0 || deadReleased !== PODS * NETWORKS || report.released.length !== PODS * NETWORKS) {
    throw new Error(`reconcile released ${report.released.length} (${deadReleased} dead), failed ${report.failed.length}`);
  }

  console.log(`\n${NODES} nodes, blocks of 16, ${PODS} pods × ${NETWORKS} networks, each pod placed twice (dead + reborn)\n`);
  console.log("| pools read | pools | reservations | s (median) | CPU s (median) | runs |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const c of variants) {
    const r = observeRuns[c] as (typeof observeRuns)[string];
    console.log(
      `| ${c === 1 ? "one at a time (before)" : `${c} at a time`} | ${r.pools} | ${r.reservations} | ${median(r.seconds).toFixed(2)} | ${median(r.cpu).toFixed(2)} | ${r.seconds.map((s) => s.toFixed(2)).join(", ")} |`,
    );
  }
  const [one, many] = variants.map((c) => median((observeRuns[c] as (typeof observeRuns)[string]).seconds)) as [number, number];
  console.log(`\nobserving, wall: × ${(many / one).toFixed(2)}`);
  console.log(
    `full reconcileOnce (concurrency ${DEFAULT_CONCURRENCY}): ${reconcile.seconds.toFixed(2)} s, CPU ${reconcile.cpu.toFixed(2)} s (this process; etcd's not counted), released ${report.released.length} (every dead sandbox's), kept ${JSON.stringify(report.kept)}`,
  );
} finally {
  await store.close();
  await etcd.stop();
}
console.log(`\netcd 3.4 (Debian), data dir on tmpfs, node ${process.version}, ${new Date().toISOString()}`);
