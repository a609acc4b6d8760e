/**
 * A power-cycle's second blocks on one etcd (Debian etcd-server, data dir on tmpfs): NODES nodes
 * each place PODS keys (one block each), then every node is "restarted" (a fresh agent's store
 * memory: a fresh core IpamCache, given to its allocator with the store) and
 * places PODS more keys at once — its first block is full, so every node claims a second block
 * while the others do, walking past the blocks they took. Side by side, alternated, on fresh
 * prefixes: the etcd store as it is (claims read ahead in one transaction), and the same store
 * advertising no `batchReads` (one claim per request, as before). Counts the store calls that reach
 * etcd (each one request) and the time of the restarted nodes' ADDs, after one uncounted warm-up round.
 * Run: pnpm --filter @ipamkit/storage-etcd bench:block-walk   (BENCH_ROUNDS=3 by default; BENCH_JSON=1:
 * also bench/results/block-walk-etcd.json)
 */
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { attachmentKey, createNodeBlockIpam, delegatingStore, IpamCache, type IpamStore, parseRange } from "@ipamkit/core";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { createEtcdStore } from "../src/index.js";

const NODES = 100;
const PODS = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const range = parseRange({ range: "10.100.0.0/20" }); // 256 blocks of 16, as in the simulation

type Variant = "read ahead" | "one by one";

/** Counts every call that reaches etcd (one request each) by name; `oneByOne` advertises no batched reads. */
function counted(store: IpamStore, oneByOne: boolean, calls: Map<string, number>): IpamStore {
  const count = <T>(name: string, p: Promise<T>) => {
    calls.set(name, (calls.get(name) ?? 0) + 1);
    return p;
  };
  const overrides: Partial<IpamStore> = {
    readPool: (ref) => count("readPool", store.readPool(ref)),
    writePool: (ref, pool, expected) => count("writePool", store.writePool(ref, pool, expected)),
    readClaim: (ref, options) => count("readClaim", store.readClaim(ref, options)),
    writeClaim: (ref, claim, expected) => count("writeClaim", store.writeClaim(ref, claim, expected)),
    deleteClaim: (ref, expected) => count("deleteClaim", store.deleteClaim(ref, expected)),
  };
  overrides.commit = (writes) => count("commit", store.commit(writes));
  overrides.readClaims = (refs) => count("readClaims", store.readClaims(refs));
  return delegatingStore(store, oneByOne ? { ...overrides, capabilities: { ...store.capabilities, batchReads: false } } : overrides);
}

/** One node's agent as started afresh: its own memories, over the node's counted etcd client. */
function agentStack(store: IpamStore, node: string) {
  return createNodeBlockIpam({ store, cache: new IpamCache(), node, blockSize: 16 });
}

async function run(endpoint: string, variant: Variant, round: number) {
  const prefix = `/bench-walk-${round}-${variant === "read ahead" ? "ahead" : "single"}/`;
  const stores = Array.from({ length: NODES }, () => createEtcdStore({ endpoints: [endpoint], prefix }));
  const calls = new Map<string, number>();
  const place = async (generation: string) =>
    Promise.all(
      stores.map(async (raw, n) => {
        const ipam = agentStack(counted(raw, variant === "one by one", calls), `node-${n}`);
        for (let p = 0; p < PODS; p++) {
          await ipam.allocate({
            network: "sim",
            ranges: [range],
            key: attachmentKey({ containerId: `${generation}-${n}-${p}`, ifName: "eth0" }),
          });
        }
        return ipam.conflicts.conflicts;
      }),
    );
  await place("first");
  calls.clear();
  const cpu = process.cpuUsage();
  const t = performance.now();
  const conflicts = (await place("reborn")).reduce((a, b) => a + b, 0);
  const seconds = (performance.now() - t) / 1000;
  const used = process.cpuUsage(cpu);
  await Promise.all(stores.map((s) => s.close()));
  return { variant, seconds, cpu: (used.user + used.system) / 1e6, conflicts, calls: Object.fromEntries(calls) };
}

const etcd = await startEtcd();
const results: Awaited<ReturnType<typeof run>>[] = [];
try {
  // a warm-up round, not counted: the first run of a process pays V8's compiling
  for (const variant of ["one by one", "read ahead"] as Variant[]) await run(etcd.endpoint, variant, -1);
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of (round % 2 === 0 ? ["one by one", "read ahead"] : ["read ahead", "one by one"]) as Variant[]) {
      results.push(await run(etcd.endpoint, variant, round));
    }
  }
} finally {
  await etcd.stop();
}

const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);
console.log(`\n${NODES} restarted nodes × ${PODS} ADDs, each claiming a second block of 16 in a /20 at once\n`);
console.log("| claims read | s | bench CPU s | requests | readClaim | readClaims | readPool | commit | conflicts |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  const c = r.calls;
  console.log(
    `| ${r.variant} | ${r.seconds.toFixed(2)} | ${r.cpu.toFixed(2)} | ${total(c)} | ${c.readClaim ?? 0} | ${c.readClaims ?? 0} | ${c.readPool ?? 0} | ${c.commit ?? 0} | ${r.conflicts} |`,
  );
}
const mean = (v: Variant, f: (r: (typeof results)[number]) => number) => {
  const rs = results.filter((r) => r.variant === v);
  return rs.reduce((a, r) => a + f(r), 0) / rs.length;
};
for (const [label, f] of [
  ["s", (r: (typeof results)[number]) => r.seconds],
  ["bench CPU s", (r: (typeof results)[number]) => r.cpu],
  ["requests", (r: (typeof results)[number]) => total(r.calls)],
] as const) {
  console.log(
    `mean ${label}: one by one ${mean("one by one", f).toFixed(2)}, read ahead ${mean("read ahead", f).toFixed(2)} (× ${(mean("read ahead", f) / mean("one by one", f)).toFixed(2)})`,
  );
}
console.log(`\netcd 3.4 (Debian), data dir on tmpfs, node ${process.version}, ${new Date().toISOString()}`);
const written = writeRawResult(rawEnvelope("block-walk-etcd", "pnpm --filter @ipamkit/storage-etcd bench:block-walk"), {
  nodes: NODES,
  pods: PODS,
  rounds: results.map((r) => ({
    variant: r.variant,
    seconds: r.seconds,
    cpu: r.cpu,
    requests: total(r.calls),
    calls: r.calls,
    conflicts: r.conflicts,
  })),
  meanRequests: { oneByOne: mean("one by one", (r) => total(r.calls)), readAhead: mean("read ahead", (r) => total(r.calls)) },
});
if (written !== undefined) console.log(`raw result: ${written}`);
