/**
 * Whereabouts' own CNI binary (v0.9.2, test-infra/whereabouts) against ipamkit's, on the same real
 * kube-apiserver (Whereabouts' CRDs) in the same run: per-call ADD and DEL time, sequential and
 * interleaved (each binary on its own range, call i of every binary back to back), then 50 ADDs
 * 10 at a time and 50 DELs 10 at a time per binary, alternating binaries, BENCH_ROUNDS rounds.
 * ipamkit runs in direct mode and through its node-local agent, each also with `whereabouts_lease`. Every range is checked after: no
 * address twice, and no entry and no ORIP left after the DELs.
 * Run: pnpm --filter @ipamkit/example-cni-plugin bench:whereabouts   (after pnpm build, both build.sh)
 * With BENCH_JSON=1 it also writes bench/results/whereabouts-interop.json (or BENCH_JSON=path).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";
import {
  attachment,
  type Binary,
  type CallResult,
  cni,
  duplicateAddresses,
  failures,
  type Interop,
  interopConf,
  startInterop,
} from "../test/whereabouts.js";
import { readState } from "../test/whereabouts-state.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BATCH = 10;
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? Number.NaN;

interface Mode {
  /** Stable id in the raw file. */
  id: string;
  name: string;
  binary: Binary;
  extra: Record<string, unknown>;
  /** The node's environment, when not the interop flat file's (the agent rows). */
  node?: Record<string, string>;
}

interface Tally {
  add: number[];
  del: number[];
  burstAdd: number[];
  burstDel: number[];
  failed: string[];
  duplicates: string[];
  left: string[];
}

let subnet = 0;
/** A fresh range for one mode's run. */
const nextRange = () => `10.90.${subnet++}.0/24`;

async function checkEmpty(interop: Interop, range: string, tally: Tally): Promise<void> {
  const state = await readState(interop, range);
  if (state.entries.length > 0 || state.orips.length > 0)
    tally.left.push(`${range}: ${state.entries.length} entries, ${state.orips.length} ORIPs`);
}

/** Sequential calls, the modes interleaved call by call: ADD i of every mode, then DEL i of every mode. */
async function sequential(interop: Interop, modes: Mode[], tallies: Tally[]): Promise<void> {
  const ranges = modes.map(() => nextRange());
  const confs = modes.map((m, k) => interopConf(interop, ranges[k] ?? "", m.extra));
  for (const command of ["ADD", "DEL"] as const) {
    const results: CallResult[][] = modes.map(() => []);
    for (let i = -2; i < CALLS; i++) {
      for (const [k, mode] of modes.entries()) {
        const r = await cni(interop, mode.binary, command, attachment(`seq-${k}-${i}`), confs[k] ?? {}, mode.node);
        if (i < 0) continue; // warm-up: the agent opens its client on its first call
        results[k]?.push(r);
        (command === "ADD" ? tallies[k]?.add : tallies[k]?.del)?.push(r.ms);
      }
    }
    for (const [k, tally] of tallies.entries()) {
      tally.failed.push(...failures(results[k] ?? []));
      if (command === "ADD") tally.duplicates.push(...duplicateAddresses(results[k] ?? []));
    }
  }
  for (const [k, tally] of tallies.entries()) await checkEmpty(interop, ranges[k] ?? "", tally);
}

/** CALLS ADDs, BATCH at a time, then as many DELs: wall times in seconds. */
async function burst(interop: Interop, mode: Mode, round: number, tally: Tally): Promise<void> {
  const range = nextRange();
  const conf = interopConf(interop, range, mode.extra);
  const attachments = Array.from({ length: CALLS }, (_, i) => attachment(`burst-${round}-${i}`));
  for (const command of ["ADD", "DEL"] as const) {
    const started = performance.now();
    const results: CallResult[] = [];
    for (let i = 0; i < CALLS; i += BATCH)
      results.push(
        ...(await Promise.all(attachments.slice(i, i + BATCH).map((a) => cni(interop, mode.binary, command, a, conf, mode.node)))),
      );
    (command === "ADD" ? tally.burstAdd : tally.burstDel).push((performance.now() - started) / 1000);
    tally.failed.push(...failures(results));
    if (command === "ADD") tally.duplicates.push(...duplicateAddresses(results));
  }
  await checkEmpty(interop, range, tally);
}

const interop = await startInterop();
// the agent's socket is a node-level key: the agent rows run on a node whose flat file (the interop
// one plus agent_socket, agent_required) names it; the agent reads the same file
const agentSocket = join(mkdtempSync(join(tmpdir(), "ipamkit-agentp-")), "agent.sock");
const agentNode = nodeFlatFile(join(agentSocket, ".."), {
  ...(JSON.parse(readFileSync(interop.flatFile, "utf8")) as Record<string, unknown>),
  agent_socket: agentSocket,
  agent_required: true,
});
const agent = await startAgentProcess(agentSocket, { env: agentNode });
const modes: Mode[] = [
  { id: "whereabouts", name: `Whereabouts ${interop.whereabouts.version}`, binary: "whereabouts", extra: {} },
  // the Lease off (the default takes it while Whereabouts runs, as here): the baseline of the rows below
  { id: "direct", name: "ipamkit, direct", binary: "ipamkit", extra: { whereabouts_lease: false } },
  { id: "agent", name: "ipamkit, agent", binary: "ipamkit", extra: { whereabouts_lease: false }, node: agentNode },
  // holding Whereabouts' Lease around each ADD's writes (coexistence mode)
  { id: "direct-lease", name: "ipamkit, direct, whereabouts_lease", binary: "ipamkit", extra: { whereabouts_lease: true } },
  { id: "agent-lease", name: "ipamkit, agent, whereabouts_lease", binary: "ipamkit", extra: { whereabouts_lease: true }, node: agentNode },
];
const tallies: Tally[] = modes.map(() => ({ add: [], del: [], burstAdd: [], burstDel: [], failed: [], duplicates: [], left: [] }));
const started = new Date();
const loadBefore = loadavg()[0] ?? Number.NaN;
try {
  for (let round = 0; round < ROUNDS; round++) {
    await sequential(interop, modes, tallies);
    // alternate which binary bursts first
    const order = round % 2 === 0 ? [...modes.keys()] : [...modes.keys()].reverse();
    for (const k of order) await burst(interop, modes[k] as Mode, round, tallies[k] as Tally);
  }
} finally {
  await agent.stop();
  await interop.stop();
}

const ms = (xs: number[]) => `${quantile(xs, 0.5).toFixed(0)} (${quantile(xs, 0.9).toFixed(0)})`;
const range = (xs: number[]) => (xs.length === 0 ? "-" : `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`);
console.log("# Whereabouts vs ipamkit on one kube-apiserver (pnpm --filter @ipamkit/example-cni-plugin bench:whereabouts)\n");
console.log(
  `| binary | ADD ms, median (p90) | DEL ms, median (p90) | ${CALLS} ADDs ${BATCH} at a time, s | ${CALLS} DELs ${BATCH} at a time, s | failed calls | duplicate addresses | left after DELs |`,
);
console.log("|---|---:|---:|---:|---:|---:|---:|---|");
for (const [k, mode] of modes.entries()) {
  const t = tallies[k] as Tally;
  console.log(
    `| ${mode.name} | ${ms(t.add)} | ${ms(t.del)} | ${range(t.burstAdd)} | ${range(t.burstDel)} | ${t.failed.length} | ${t.duplicates.length} | ${t.left.length === 0 ? "nothing" : t.left.join("; ")} |`,
  );
}
console.log(
  `\nkube-apiserver ${interop.api.versions.kubernetes} on etcd ${interop.api.versions.etcd}, 127.0.0.1; ${ROUNDS} rounds of ${CALLS} sequential ADDs then DELs per binary (interleaved call by call, ${ROUNDS * CALLS} calls per median) and one burst per binary per round; node ${process.version}; ${started.toISOString()}; load average (1 min) ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? Number.NaN).toFixed(1)} after`,
);
for (const [k, mode] of modes.entries())
  for (const line of [...(tallies[k]?.failed ?? []), ...(tallies[k]?.duplicates ?? [])].slice(0, 5)) console.log(`- ${mode.name}: ${line}`);
const written = writeRawResult(rawEnvelope("whereabouts-interop", "pnpm --filter @ipamkit/example-cni-plugin bench:whereabouts"), {
  kubernetes: interop.api.versions.kubernetes,
  etcd: interop.api.versions.etcd,
  whereabouts: interop.whereabouts.version,
  calls: CALLS,
  rounds: ROUNDS,
  batch: BATCH,
  load: { before: loadBefore, after: loadavg()[0] ?? null },
  modes: modes.map((mode, k) => {
    const t = tallies[k] as Tally;
    return {
      id: mode.id,
      name: mode.name,
      addMedianMs: quantile(t.add, 0.5),
      addP90Ms: quantile(t.add, 0.9),
      delMedianMs: quantile(t.del, 0.5),
      delP90Ms: quantile(t.del, 0.9),
      burstAddS: t.burstAdd,
      burstDelS: t.burstDel,
      failed: t.failed.length,
      duplicates: t.duplicates.length,
      left: t.left,
    };
  }),
});
if (written !== undefined) console.log(`\nraw result: ${written}`);
