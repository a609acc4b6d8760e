/**
 * allocate+release per op in one pool, by reservation count and by range size, with a
 * Whereabouts-style linear scan (lowest free by probing every offset) run in the same process as
 * the baseline. Prints a markdown table. Run: pnpm --filter @ipamkit/core bench (BENCH_JSON=1: also
 * bench/results/core.json).
 */
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { Bench } from "tinybench";
import { allocate, release } from "../src/allocator.js";
import { attachmentKey } from "../src/key.js";
import { Pool } from "../src/pool.js";
import { isAssignable, parseRange, type Range } from "../src/range.js";
import type { Reservation } from "../src/reservation.js";

const key = (n: number | string) => attachmentKey({ containerId: `c${n}`, ifName: "eth0" });

/** `count` reservations from the start of the range with 1% holes at seeded random places. */
function filledPool(range: Range, count: number, holeRate = 0.01): Pool {
  let seed = 42;
  const rnd = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const reservations: Reservation[] = [];
  let offset = range.first;
  while (reservations.length < count) {
    if (isAssignable(range, offset) && rnd() >= holeRate) reservations.push({ offset, key: key(reservations.length), podRef: "ns/p" });
    offset += 1n;
  }
  return Pool.fromReservations(range.cidr, reservations);
}

/** The baseline: Whereabouts' lowest-free loop, probing offsets one by one against a set. */
function linearAllocate(range: Range, held: Set<bigint>): bigint {
  for (let o = range.first; o <= range.last; o++) if (isAssignable(range, o) && !held.has(o)) return o;
  throw new Error("exhausted");
}

interface Case {
  label: string;
  range: Range;
  count: number;
  holeRate?: number;
}

const slash8 = parseRange({ range: "10.0.0.0/8", gateway: "10.0.0.1" });
const countCases: Case[] = [1_000, 10_000, 100_000].flatMap((count) => [
  { label: `${count / 1000}k reservations, /8, 1% holes`, range: slash8, count },
  { label: `${count / 1000}k reservations, /8, dense (first free after the last)`, range: slash8, count, holeRate: 0 },
]);
const sizeCases: Case[] = [
  ["/24", { range: "10.1.2.0/24", gateway: "10.1.2.1", exclude: ["10.1.2.64/28"] }],
  ["/16", { range: "10.1.0.0/16", gateway: "10.1.0.1", exclude: ["10.1.0.64/28"] }],
  ["/8", { range: "10.0.0.0/8", gateway: "10.0.0.1", exclude: ["10.0.0.64/28"] }],
  ["/64 (v6)", { range: "2001:db8:1:2::/64", gateway: "2001:db8:1:2::1", exclude: ["2001:db8:1:2::40/124"] }],
  ["/48 (v6)", { range: "2001:db8:1::/48", gateway: "2001:db8:1::1", exclude: ["2001:db8:1::40/124"] }],
].map(([label, spec]) => ({ label: `${label}, 200 reservations`, range: parseRange(spec as never), count: 200 }));

async function measure(cases: Case[]) {
  const bench = new Bench({ time: 400, warmup: true, warmupTime: 100 });
  for (const c of cases) {
    const pool = filledPool(c.range, c.count, c.holeRate);
    const held = new Set(pool.reservations().map((r) => r.offset));
    let n = 0;
    bench.add(`ipamkit ${c.label}`, () => {
      const k = key(`new${n++}`);
      const a = allocate(pool, c.range, { key: k });
      release(a.pool, k);
    });
    bench.add(`linear ${c.label}`, () => {
      const o = linearAllocate(c.range, held);
      held.add(o);
      held.delete(o);
    });
  }
  await bench.run();
  const us = (name: string) => {
    const task = bench.getTask(name);
    const r = task?.result as { latency?: { mean?: number; p50?: number } } | undefined;
    return (r?.latency?.p50 ?? r?.latency?.mean ?? Number.NaN) * 1000;
  };
  return cases.map((c) => ({ label: c.label, ours: us(`ipamkit ${c.label}`), linear: us(`linear ${c.label}`) }));
}

function table(title: string, rows: { label: string; ours: number; linear: number }[], base: number) {
  console.log(`\n### ${title}\n`);
  console.log("| case | ipamkit µs/op (median) | × first row | linear-scan baseline µs/op | baseline ÷ ipamkit |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.ours.toFixed(2)} | ${(r.ours / base).toFixed(2)} | ${r.linear.toFixed(2)} | ${(r.linear / r.ours).toFixed(1)} |`,
    );
  }
}

const byCount = await measure(countCases);
table("allocate+release by reservation count (lowest-free)", byCount, byCount[0]?.ours ?? 1);
const bySize = await measure(sizeCases);
table("allocate+release by range size (200 reservations, gateway + one excluded /28)", bySize, bySize[0]?.ours ?? 1);
console.log(`\nnode ${process.version}, ${new Date().toISOString()}`);
const usPerOp = (rows: { label: string; ours: number; linear: number }[]) =>
  rows.map((r) => ({ case: r.label, ipamkitUs: r.ours, linearScanUs: r.linear }));
const written = writeRawResult(rawEnvelope("core", "pnpm --filter @ipamkit/core bench"), {
  byCount: usPerOp(byCount),
  bySize: usPerOp(bySize),
});
if (written !== undefined) console.log(`raw result: ${written}`);
