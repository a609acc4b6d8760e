/**
 * The reconcile after a power-cycle, at the simulation's scale, on one etcd (Debian etcd-server,
 * data dir on tmpfs) and on the Kubernetes test API server (in this process: its CPU counts):
 * NODES nodes with per-node blocks of 16, NETWORKS networks (a /20 each), PODS StatefulSet pods.
 * Every pod is placed twice — its dead sandbox, then its reborn one under the same name with a
 * new UID — so each node holds two blocks per network, the pods list only the reborn sandboxes'
 * addresses, and half the reservations are orphans (each with its overlapping-range claim).
 *
 * 1. Observing the pools (observePools): listed and read `concurrency` at a time (the store's bulk
 *    reads hidden, as before 2026-12-05 noon) against one bulk read (`listPools({ contents: true })`), alternated, on
 *    the same data; medians. Each run through a store client of its own, opened for it: a
 *    reconciler is a process of its own, whose store has read nothing yet.
 * 2. Full reconcileOnce passes, alternated the same two ways (without the bulk reads: pools read
 *    each, claims read per pool write; with them: pools and claims listed with contents where the
 *    store lists in bulk), each through a fresh client; each must release exactly the dead sandboxes'
 *    reservations, which are then placed again for the next pass (not timed).
 * Run: pnpm --filter @ipamkit/reconciler bench:power-cycle   (BENCH_STORES=etcd,kubernetes,
 * BENCH_ROUNDS=5 observation rounds and BENCH_PASSES=2 passes each way by default; BENCH_JSON=1: also
 * bench/results/reconcile-power-cycle.json)
 */
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import {
  attachmentKey,
  createNodeBlockIpam,
  delegatingStore,
  formatIp,
  IpamCache,
  type IpamStore,
  type PodFacts,
  parseRange,
} from "@ipamkit/core";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { KubeConfig } from "@kubernetes/client-node";
import { observePools } from "../src/observe.js";
import type { PodSource } from "../src/ports.js";
import { DEFAULT_CONCURRENCY, reconcileOnce } from "../src/reconcile.js";
import { measure, median } from "./measure.js";

const NODES = 100;
const NETWORKS = 10;
const PODS = 1000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PASSES = Number(process.env.BENCH_PASSES ?? 2);
const STORES = (process.env.BENCH_STORES ?? "etcd,kubernetes").split(",");
const networkName = (k: number) => `net-${k}`;
const ranges = Array.from({ length: NETWORKS }, (_, k) => parseRange({ range: `10.${100 + k}.0.0/20` }));

/** Places every pod's NETWORKS attachments for one generation, all nodes at once, each node's pods in turn. */
async function place(store: IpamStore, generation: number): Promise<Map<string, string[]>> {
  const ips = new Map<string, string[]>();
  await Promise.all(
    Array.from({ length: NODES }, async (_, n) => {
      // a node's agent as started afresh (its own memories over the shared client), as after a power-cycle
      const ipam = createNodeBlockIpam({ store, cache: new IpamCache(), node: `node-${n}`, blockSize: 16 });
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

/** A store backend: a fresh client per call of `open`, requests counted where the server counts them. */
interface Backend {
  name: string;
  open(): IpamStore;
  requests?(): number;
  stop(): Promise<void>;
}

async function etcdBackend(): Promise<Backend> {
  const etcd = await startEtcd();
  return {
    name: "etcd 3.4 (Debian), data dir on tmpfs",
    open: () => createEtcdStore({ endpoints: [etcd.endpoint] }),
    stop: () => etcd.stop(),
  };
}

async function kubernetesBackend(): Promise<Backend> {
  const server = await startKubeTestServer({ port: 0 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig({ namespace: "kube-system" }));
  return {
    name: "the Kubernetes test API server (in this process)",
    open: () => createKubernetesStore({ kubeconfig: kubeConfig, whereaboutsCompatible: false }),
    requests: () => server.stats().requests,
    stop: () => server.close(),
  };
}

/** The store advertising no bulk lists (listings with contents then read record by record): every other call, readClaims included, as it is. */
function withoutScans(store: IpamStore): IpamStore {
  return delegatingStore(store, { capabilities: { ...store.capabilities, bulkLists: false } });
}

/** One call through a client opened for it (its cache empty, as in a reconciler's own process), its requests counted. */
async function cold<T>(backend: Backend, scans: boolean, work: (store: IpamStore) => Promise<T>) {
  const client = backend.open();
  const before = backend.requests?.();
  try {
    const run = await measure(() => work(scans ? client : withoutScans(client)));
    return { ...run, requests: before === undefined ? undefined : (backend.requests?.() ?? 0) - before };
  } finally {
    await client.close();
  }
}

type Runs = { wall: number[]; cpu: number[]; requests: number[] };
const WAYS = [false, true] as const;
const way = (scans: boolean) => (scans ? "bulk reads (listings with contents)" : "a read each (before)");
const seconds = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(2)).join(", ");
const med = (xs: number[]) => (median(xs) / 1000).toFixed(2);

/** Runs `work` ROUNDS times each way, alternating which way goes first. */
async function alternated<T>(
  rounds: number,
  work: (scans: boolean) => Promise<{ wall: number; cpu: number; requests: number | undefined; value: T }>,
) {
  const runs = new Map<boolean, Runs & { last?: T }>(WAYS.map((w) => [w, { wall: [], cpu: [], requests: [] }]));
  for (let round = 0; round < rounds; round++) {
    for (const scans of round % 2 === 0 ? WAYS : [...WAYS].reverse()) {
      const run = await work(scans);
      const row = runs.get(scans) as Runs & { last?: T };
      row.wall.push(run.wall);
      row.cpu.push(run.cpu);
      if (run.requests !== undefined) row.requests.push(run.requests);
      row.last = run.value;
    }
  }
  return runs;
}

/** Per store, for the raw file: each way's medians and requests. */
const rawStores: object[] = [];

async function benchStore(backend: Backend): Promise<void> {
  const placing = backend.open();
  try {
    const setup = await measure(async () => {
      await place(placing, 1);
      return place(placing, 2);
    });
    const reborn = setup.value;
    console.log(`\n## ${backend.name}\n\nsetup: ${2 * PODS * NETWORKS} ADDs on ${NODES} nodes in ${(setup.wall / 1000).toFixed(1)} s`);

    const observe = (scans: boolean) => cold(backend, scans, (s) => observePools(s, { concurrency: DEFAULT_CONCURRENCY }));
    for (const scans of WAYS) await observe(scans); // warm-up: the first pass of a process pays V8's compiling
    const observed = await alternated(ROUNDS, observe);

    const passes = await alternated(PASSES, async (scans) => {
      const run = await cold(backend, scans, (s) => reconcileOnce({ store: s, pods: podSource(reborn, 2), graceMs: 0 }));
      const report = run.value;
      const dead = report.released.filter((v) => v.observed.reservation.podUid?.startsWith("uid-1-")).length;
      if (report.failed.length > 0 || dead !== PODS * NETWORKS || report.released.length !== PODS * NETWORKS)
        throw new Error(`reconcile released ${report.released.length} (${dead} dead), failed ${report.failed.length}`);
      await place(placing, 1); // the dead sandboxes again, for the next pass (not timed)
      return run;
    });

    console.log(`\n${NODES} nodes, blocks of 16, ${PODS} pods × ${NETWORKS} networks, each pod placed twice (dead + reborn)\n`);
    console.log("| | wall s (median) | CPU s (median) | requests | wall s, each run | CPU s, each run |");
    console.log("|---|---:|---:|---:|---|---|");
    for (const scans of WAYS) {
      const r = observed.get(scans) as Runs & { last?: Awaited<ReturnType<typeof observePools>> };
      console.log(
        `| observing ${r.last?.pools} pools (${r.last?.reservations.length} reservations), ${way(scans)} | ${med(r.wall)} | ${med(r.cpu)} | ${r.requests.length === 0 ? "—" : median(r.requests)} | ${seconds(r.wall)} | ${seconds(r.cpu)} |`,
      );
    }
    for (const scans of WAYS) {
      const r = passes.get(scans) as Runs;
      console.log(
        `| full pass, ${way(scans)}: ${PODS * NETWORKS} released each time | ${med(r.wall)} | ${med(r.cpu)} | ${r.requests.length === 0 ? "—" : r.requests.join(", ")} | ${seconds(r.wall)} | ${seconds(r.cpu)} |`,
      );
    }
    const ratio = (runs: Map<boolean, Runs>, key: "wall" | "cpu") =>
      (median(runs.get(true)?.[key] ?? []) / median(runs.get(false)?.[key] ?? [])).toFixed(2);
    console.log(
      `\nbulk reads against a read each: observing wall × ${ratio(observed, "wall")}, CPU × ${ratio(observed, "cpu")}; full pass wall × ${ratio(passes, "wall")}, CPU × ${ratio(passes, "cpu")}`,
    );
    console.log(
      `CPU: this process's (the reconciler's${backend.requests === undefined ? "; etcd's not counted" : " and the test API server's"})`,
    );
    const rawWay = (runs: Map<boolean, Runs>, scans: boolean) => {
      const r = runs.get(scans) as Runs;
      return { wallMs: median(r.wall), cpuMs: median(r.cpu), requests: r.requests };
    };
    rawStores.push({
      store: backend.name,
      observing: { readEach: rawWay(observed, false), bulk: rawWay(observed, true) },
      fullPass: { released: PODS * NETWORKS, readEach: rawWay(passes, false), bulk: rawWay(passes, true) },
    });
  } finally {
    await placing.close();
  }
}

for (const name of STORES) {
  const backend = name === "etcd" ? await etcdBackend() : name === "kubernetes" ? await kubernetesBackend() : undefined;
  if (backend === undefined) throw new Error(`BENCH_STORES: unknown store ${name} (etcd, kubernetes)`);
  try {
    await benchStore(backend);
  } finally {
    await backend.stop();
  }
}
console.log(`\nnode ${process.version}, ${new Date().toISOString()}`);
const written = writeRawResult(rawEnvelope("reconcile-power-cycle", "pnpm --filter @ipamkit/reconciler bench:power-cycle"), {
  nodes: NODES,
  pods: PODS,
  networks: NETWORKS,
  stores: rawStores,
});
if (written !== undefined) console.log(`raw result: ${written}`);
