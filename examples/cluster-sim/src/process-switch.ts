import { parseArgs } from "node:util";
import { positiveInteger } from "./cli.js";
import { faultCost, type HopCost, ringHop } from "./switch-cost.js";

/**
 * pnpm process-switch — what this machine charges, without Node, when many processes take turns:
 * K processes pass one token round a ring, each writing its own working set when it wakes (as a
 * node's agent wakes for a call), for K = 1, 10, 100 and a few working-set sizes; the CPU per
 * wake-up, the median of interleaved rounds. Also the CPU of a page faulted in afresh after
 * MADV_DONTNEED. Background for `pnpm agent-cost --agents-per-process`.
 */
const { values } = parseArgs({
  options: {
    processes: { type: "string", default: "1,10,100" },
    kb: { type: "string", default: "0,256,1024,4096" },
    hops: { type: "string", default: "30000" },
    rounds: { type: "string", default: "3" },
  },
});
const list = (name: "processes" | "kb", min: number): number[] => {
  const items = (values[name] ?? "").split(",").map(Number);
  if (items.length > 0 && items.every((n) => Number.isInteger(n) && n >= min)) return items;
  process.stderr.write(`process-switch: --${name} is a comma-separated list of integers >= ${min}, not ${values[name]}\n`);
  process.exit(2);
};
const positive = (name: "hops" | "rounds"): number => positiveInteger("process-switch", name, values[name]);
const [counts, sizes, hops, rounds] = [list("processes", 1), list("kb", 0), positive("hops"), positive("rounds")];

const runs = new Map<string, HopCost[]>();
for (let round = 0; round < rounds; round++) {
  for (const kb of sizes) {
    for (const processes of counts) {
      const key = `${kb}/${processes}`;
      runs.set(key, [...(runs.get(key) ?? []), ringHop({ processes, kb, hops: Math.max(hops, processes) })]);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const cell = (kb: number, processes: number) => {
  const costs = runs.get(`${kb}/${processes}`) ?? [];
  return { cpu: median(costs.map((c) => c.user + c.system)), system: median(costs.map((c) => c.system)) };
};

console.log(`| working set written per wake-up | ${counts.map((k) => `${k} process${k === 1 ? "" : "es"}`).join(" | ")} |`);
console.log(`|---|${counts.map(() => "---:|").join("")}`);
for (const kb of sizes) {
  const cells = counts.map((k) => {
    const c = cell(kb, k);
    return `${c.cpu.toFixed(1)} (${c.system.toFixed(1)})`;
  });
  console.log(`| ${kb} KiB | ${cells.join(" | ")} |`);
}
console.log(`\nCPU µs per wake-up (of which system), all processes; median of ${rounds} interleaved rounds of ${hops} hops.`);
const fault = faultCost({ kb: 256, rounds: 5000 });
console.log(`A 4 KiB page faulted in afresh after MADV_DONTNEED: ${fault.micros.toFixed(1)} µs of CPU (${fault.faults} faults).`);
