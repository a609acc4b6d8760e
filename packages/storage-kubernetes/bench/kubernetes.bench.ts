/**
 * storage-kubernetes through @kubernetes/client-node over real HTTP to the project's test API
 * server (in this process), side by side:
 *  1. N sequential bare compare-and-swap PUTs of one small custom object (resourceVersion-guarded):
 *     the client + server limit here, the baseline — as client-node sends them by default (node-fetch,
 *     a new connection each), then as the store sends them (apiTransport: Node's http, kept alive);
 *  2. N allocations by 1 allocator on one pool (createIpam + createKubernetesStore, overlap on);
 *  3. N allocations by 50 concurrent allocators on one pool (whole-object CAS: real 409s).
 * Then the IPPool object's size at 1k and 10k allocations, and the largest pool that fits etcd's
 * default 1.5 MiB request limit, for ipamkit entries and for Whereabouts-only entries.
 * Run: pnpm --filter @ipamkit/storage-kubernetes bench   (BENCH_N=1000 by default; BENCH_JSON=1: also
 * bench/results/kubernetes.json)
 */
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { attachmentKey, createIpam, Pool, parseCidr, parseRange, type Reservation } from "@ipamkit/core";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { type ConfigurationOptions, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { apiTransport } from "../src/api.js";
import { createKubernetesStore } from "../src/index.js";
import { ipPoolFor } from "../src/ippool.js";
import { GROUP, RESERVATION, VERSION } from "../src/objects.js";

const N = Number(process.env.BENCH_N ?? 1000);
const LIMIT = 1_572_864; // etcd's default --max-request-bytes (1.5 MiB)
const server = await startKubeTestServer({ port: 0 });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromString(server.kubeconfig());
const rows: { id: string; name: string; seconds: number; conflicts?: number }[] = [];

try {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const at = { group: GROUP, version: VERSION, namespace: "bench", plural: RESERVATION.plural };
  let object = (await api.createNamespacedCustomObject({
    ...at,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: RESERVATION.kind, metadata: { name: "cas" }, spec: { podref: "0" } },
  })) as { metadata: { resourceVersion: string }; spec: { podref: string } };
  /** N sequential guarded PUTs of the object, sent with `options` (client-node's per-call options). */
  const barePuts = async (id: string, name: string, options?: ConfigurationOptions) => {
    const started = performance.now();
    for (let i = 1; i <= N; i++) {
      object = await api.replaceNamespacedCustomObject(
        { ...at, name: "cas", body: { ...object, spec: { podref: `${rows.length}-${i}` } } },
        options,
      );
    }
    rows.push({ id, name, seconds: (performance.now() - started) / 1000 });
  };
  await barePuts("bare-puts-default", `${N} sequential bare CAS PUTs`);
  const transport = apiTransport(10_000);
  await barePuts("bare-puts-store", `${N} sequential bare CAS PUTs, as the store sends them (apiTransport)`, transport);
  transport.close();

  for (const allocators of [1, 50]) {
    const range = parseRange({ range: "10.0.0.0/16" });
    const counter = { conflicts: 0 };
    const store = createKubernetesStore({ kubeconfig: kubeConfig, namespace: `bench-${allocators}` });
    const ipam = createIpam({ store, retry: { counter, attempts: 100_000, deadlineMs: 1_800_000, baseDelayMs: 1, maxDelayMs: 100 } });
    const each = Math.ceil(N / allocators);
    const t = performance.now();
    await Promise.all(
      Array.from({ length: allocators }, async (_, w) => {
        for (let n = 0; n < each && w * each + n < N; n++) {
          await ipam.allocate({
            ranges: [range],
            key: attachmentKey({ containerId: `w${w}-n${n}`, ifName: "net1" }),
            podRef: `bench/p${w}-${n}`,
          });
        }
      }),
    );
    rows.push({
      id: `allocators-${allocators}`,
      name: `${N} allocations, ${allocators} allocator${allocators > 1 ? "s" : ""}, one pool`,
      seconds: (performance.now() - t) / 1000,
      conflicts: counter.conflicts,
    });
    const size = (await store.readPool({ network: "", cidr: range.cidr.text }))?.pool.size;
    if (size !== N) throw new Error(`expected ${N} reservations, found ${size}`);
    await store.close();
  }
} finally {
  await server.close();
}

const base = rows[0]?.seconds ?? 1;
console.log(`\n| case | seconds | ops/s | × bare CAS | conflicts retried |\n|---|---:|---:|---:|---:|`);
for (const r of rows)
  console.log(
    `| ${r.name} | ${r.seconds.toFixed(2)} | ${(N / r.seconds).toFixed(0)} | ${(r.seconds / base).toFixed(2)} | ${r.conflicts ?? "-"} |`,
  );

// Object size: entries as the CNI plugin writes them (64-hex container ID, podref, ifname, pod UID,
// creation time) and as Whereabouts writes them (id, podref, ifname), in a /8 so offsets grow long.
const cidr = parseCidr("10.0.0.0/8");
const ref = { network: "", cidr: cidr.text };
const entry = (i: number, ipamkit: boolean): Reservation => ({
  offset: BigInt(i + 1),
  key: attachmentKey({ containerId: i.toString(16).padStart(64, "0"), ifName: "net1" }),
  podRef: `default/app-7d9f8c6b5-${i.toString(36).padStart(5, "x")}`,
  ...(ipamkit ? { podUid: "0b8f7c2e-4d1a-4c3b-9e6f-1a2b3c4d5e6f", createdAt: "2026-12-02T18:00:00.000Z" } : {}),
});
const bytes = (n: number, ipamkit: boolean) =>
  Buffer.byteLength(
    JSON.stringify(
      ipPoolFor(
        ref,
        Pool.fromReservations(
          cidr,
          Array.from({ length: n }, (_, i) => entry(i, ipamkit)),
        ),
        undefined,
        {
          name: "10.0.0.0-8",
          namespace: "kube-system",
          writeId: "00000000-0000-4000-8000-000000000000",
          whereaboutsCompatible: true,
        },
      ),
    ),
  );
const largest = (ipamkit: boolean) => {
  let lo = 0;
  let hi = 100_000;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytes(mid, ipamkit) <= LIMIT) lo = mid;
    else hi = mid - 1;
  }
  return lo;
};
console.log(`\n| IPPool object (JSON) | 1k allocations | 10k allocations | largest under 1.5 MiB |\n|---|---:|---:|---:|`);
for (const ipamkit of [true, false]) {
  console.log(
    `| ${ipamkit ? "ipamkit entries (id, podref, ifname, poduid, created)" : "Whereabouts entries (id, podref, ifname)"} | ${(bytes(1000, ipamkit) / 1024).toFixed(0)} KiB | ${(bytes(10_000, ipamkit) / 1024).toFixed(0)} KiB | ${largest(ipamkit)} |`,
  );
}
console.log(
  `\nkube-test-server in-process (real HTTP on 127.0.0.1), @kubernetes/client-node 1.4.0, node ${process.version}, ${new Date().toISOString()}`,
);
const written = writeRawResult(rawEnvelope("kubernetes", "pnpm --filter @ipamkit/storage-kubernetes bench"), {
  n: N,
  server: "kube-test-server in-process (real HTTP on 127.0.0.1), @kubernetes/client-node 1.4.0",
  rows,
  objectBytes: [true, false].map((ipamkit) => ({
    entries: ipamkit ? "ipamkit" : "whereabouts",
    at1k: bytes(1000, ipamkit),
    at10k: bytes(10_000, ipamkit),
    largestUnderLimit: largest(ipamkit),
  })),
});
if (written !== undefined) console.log(`raw result: ${written}`);
