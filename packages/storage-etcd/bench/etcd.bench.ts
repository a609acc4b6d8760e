/**
 * One etcd (Debian etcd-server, data dir on tmpfs), side by side:
 *  1. N sequential bare compare-and-swap puts (one key, guarded by mod revision): the server's limit here;
 *  2. N allocations by 1 allocator on one pool (createIpam + createEtcdStore, overlap protection on);
 *  3. N allocations by 50 concurrent allocators on one pool.
 * Run: pnpm --filter @ipamkit/storage-etcd bench   (BENCH_N=1000 by default; BENCH_JSON=1: also
 * bench/results/etcd.json)
 */
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { attachmentKey, createIpam, parseRange } from "@ipamkit/core";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { Etcd3 } from "etcd3";
import { createEtcdStore } from "../src/index.js";

const N = Number(process.env.BENCH_N ?? 1000);
const etcd = await startEtcd();
const rows: { id: string; name: string; seconds: number; conflicts?: number }[] = [];

try {
  const client = new Etcd3({ hosts: etcd.endpoint });
  let rev = (await client.if("/bench/cas", "Create", "==", 0).then(client.put("/bench/cas").value("0")).commit()).header.revision;
  let t = performance.now();
  for (let i = 1; i <= N; i++) {
    const r = await client
      .if("/bench/cas", "Mod", "==", rev)
      .then(client.put("/bench/cas").value(String(i)))
      .commit();
    if (!r.succeeded) throw new Error("unexpected conflict");
    rev = r.header.revision;
  }
  rows.push({ id: "bare-cas", name: `${N} sequential bare CAS puts`, seconds: (performance.now() - t) / 1000 });
  client.close();

  for (const allocators of [1, 50]) {
    const range = parseRange({ range: "10.0.0.0/16" });
    const counter = { conflicts: 0 };
    const store = createEtcdStore({ endpoints: [etcd.endpoint], prefix: `/bench-${allocators}/` });
    const ipam = createIpam({ store, retry: { counter, attempts: 10_000, deadlineMs: 600_000, baseDelayMs: 1, maxDelayMs: 100 } });
    const each = Math.ceil(N / allocators);
    t = performance.now();
    await Promise.all(
      Array.from({ length: allocators }, async (_, w) => {
        for (let n = 0; n < each && w * each + n < N; n++) {
          await ipam.allocate({ ranges: [range], key: attachmentKey({ containerId: `w${w}-n${n}`, ifName: "eth0" }) });
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
  await etcd.stop();
}

const base = rows[0]?.seconds ?? 1;
console.log(`\n| case | seconds | ops/s | × bare CAS | conflicts retried |\n|---|---:|---:|---:|---:|`);
for (const r of rows)
  console.log(
    `| ${r.name} | ${r.seconds.toFixed(2)} | ${(N / r.seconds).toFixed(0)} | ${(r.seconds / base).toFixed(2)} | ${r.conflicts ?? "-"} |`,
  );
console.log(`\netcd 3.4 (Debian), data dir on tmpfs, node ${process.version}, ${new Date().toISOString()}`);
const written = writeRawResult(rawEnvelope("etcd", "pnpm --filter @ipamkit/storage-etcd bench"), {
  n: N,
  etcd: "3.4 (Debian), tmpfs",
  rows,
});
if (written !== undefined) console.log(`raw result: ${written}`);
