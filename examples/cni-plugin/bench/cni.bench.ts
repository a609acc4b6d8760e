/**
 * One script, side by side: the latency of one ADD and one DEL of the built plugin (file store)
 * against a bare `node -e 0` start, and ADD+DEL against Debian's host-local with 10, 1000 and 5000
 * existing allocations. Through the agent: dist/ipamkit, the static binary a runtime executes (it
 * alone routes; dist/ipamkit-node is direct mode only).
 * Run: pnpm --filter @ipamkit/example-cni-plugin bench (after pnpm build); with BENCH_JSON=1 it also
 * writes bench/results/cni.json.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rawEnvelope, writeRawResult } from "@ipamkit/bench-figures";
import { attachmentKey, Pool, parseCidr } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";

const PLUGIN = join(import.meta.dirname, "..", "dist", "ipamkit");
const HOST_LOCAL = "/usr/lib/cni/host-local";
const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const base = existsSync("/dev/shm") ? "/dev/shm" : "/tmp";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

function time(cmd: string, args: string[], env: Record<string, string>, input: string): number {
  const t = performance.now();
  const r = spawnSync(cmd, args, { env: { PATH: process.env.PATH ?? "", ...env }, input, encoding: "utf8" });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${cmd} ${env.CNI_COMMAND}: ${r.stdout} ${r.stderr}`);
  return ms;
}

const env = (command: string, id: string, node: Record<string, string> = {}) => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_IFNAME: "eth0",
  CNI_NETNS: "/x",
  CNI_PATH: "/usr/lib/cni",
  ...node,
});

/** The network config of a node whose flat file is in `dir` (with the agent's socket when given: a node-level key); `node` names that file for the binary. */
async function ipamkitConf(dir: string, existing: number, agentSocket?: string): Promise<{ conf: string; node: Record<string, string> }> {
  const node = nodeFlatFile(dir, agentSocket === undefined ? {} : { agent_socket: agentSocket, agent_required: true });
  const store = createFileStore({ dir: join(dir, "store") });
  const cidr = parseCidr("10.0.0.0/16");
  const reservations = Array.from({ length: existing }, (_, i) => ({
    offset: BigInt(i + 2),
    key: attachmentKey({ containerId: `prefill-${i}`, ifName: "eth0" }),
    podRef: "ns/p",
  }));
  if (existing > 0) await store.writePool({ network: "", cidr: cidr.text }, Pool.fromReservations(cidr, reservations), undefined);
  await store.close();
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "bench",
    type: "macvlan",
    ipam: { type: "ipamkit", range: "10.0.0.0/16", data_dir: join(dir, "store"), enable_overlapping_ranges: false },
  });
  return { conf, node };
}

function hostLocalConf(dir: string, existing: number): string {
  const net = join(dir, "bench");
  mkdirSync(net, { recursive: true });
  for (let i = 0; i < existing; i++) {
    const n = i + 2;
    writeFileSync(join(net, `10.0.${n >> 8}.${n & 255}`), `prefill-${i}\r\neth0`);
  }
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "bench",
    type: "host-local",
    ipam: { type: "host-local", ranges: [[{ subnet: "10.0.0.0/16" }]], dataDir: dir },
  });
}

const rows: string[] = [];
/** What the raw file holds: medians in ms. */
const raw: {
  single: Record<string, number>;
  byAllocations: { allocations: number; hostLocalMs: number; directMs: number; agentMs: number }[];
} = { single: {}, byAllocations: [] };
// the node-local agent, for the "through the agent" rows (the same binary, agent_socket set)
const agentDir = mkdtempSync(join(base, "ipamkit-cni-bench-agent-"));
const agent = await startAgentProcess(join(agentDir, "agent.sock"), { env: nodeFlatFile(agentDir, {}) });
// 1. ADD and DEL against node -e 0
{
  const dir = mkdtempSync(join(base, "ipamkit-cni-bench-"));
  const { conf, node: direct } = await ipamkitConf(dir, 10);
  const { conf: viaAgent, node: withAgent } = await ipamkitConf(mkdtempSync(join(base, "ipamkit-cni-bench-a-")), 10, agent.socketPath);
  const node: number[] = [];
  const add: number[] = [];
  const del: number[] = [];
  const addAgent: number[] = [];
  const delAgent: number[] = [];
  for (let i = 0; i < RUNS + 3; i++) {
    const n = time(process.execPath, ["-e", "0"], {}, "");
    const a = time(PLUGIN, [], env("ADD", `c${i}`, direct), conf);
    const d = time(PLUGIN, [], env("DEL", `c${i}`, direct), conf);
    const aa = time(PLUGIN, [], env("ADD", `c${i}`, withAgent), viaAgent);
    const da = time(PLUGIN, [], env("DEL", `c${i}`, withAgent), viaAgent);
    if (i < 3) continue; // warm-up
    node.push(n);
    add.push(a);
    del.push(d);
    addAgent.push(aa);
    delAgent.push(da);
  }
  rmSync(dir, { recursive: true, force: true });
  const [mn, ma, md, maa, mda] = [median(node), median(add), median(del), median(addAgent), median(delAgent)];
  raw.single = { nodeMs: mn, directAddMs: ma, directDelMs: md, agentAddMs: maa, agentDelMs: mda };
  rows.push("| call | median ms | × `node -e 0` |", "|---|---:|---:|");
  rows.push(
    `| \`node -e 0\` | ${mn.toFixed(1)} | 1.00 |`,
    `| ipamkit ADD (file store, 10 allocations) | ${ma.toFixed(1)} | ${(ma / mn).toFixed(2)} |`,
    `| ipamkit DEL | ${md.toFixed(1)} | ${(md / mn).toFixed(2)} |`,
    `| ipamkit ADD through the agent | ${maa.toFixed(1)} | ${(maa / mn).toFixed(2)} |`,
    `| ipamkit DEL through the agent | ${mda.toFixed(1)} | ${(mda / mn).toFixed(2)} |`,
  );
}
// 2. ADD+DEL against host-local by existing allocations
rows.push(
  "",
  "| existing allocations | host-local ADD+DEL median ms | ipamkit ADD+DEL median ms | ipamkit ÷ host-local | ipamkit through the agent ms | agent ÷ host-local |",
  "|---:|---:|---:|---:|---:|---:|",
);
for (const existing of [10, 1000, 5000]) {
  const hlDir = mkdtempSync(join(base, "ipamkit-cni-bench-hl-"));
  const ikDir = mkdtempSync(join(base, "ipamkit-cni-bench-ik-"));
  const hl = hostLocalConf(hlDir, existing);
  const { conf: ik, node: ikNode } = await ipamkitConf(ikDir, existing);
  const agDir = mkdtempSync(join(base, "ipamkit-cni-bench-ag-"));
  const { conf: ag, node: agNode } = await ipamkitConf(agDir, existing, agent.socketPath);
  const hlTimes: number[] = [];
  const ikTimes: number[] = [];
  const agTimes: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    hlTimes.push(time(HOST_LOCAL, [], env("ADD", `h${i}`), hl) + time(HOST_LOCAL, [], env("DEL", `h${i}`), hl));
    ikTimes.push(time(PLUGIN, [], env("ADD", `k${i}`, ikNode), ik) + time(PLUGIN, [], env("DEL", `k${i}`, ikNode), ik));
    agTimes.push(time(PLUGIN, [], env("ADD", `k${i}`, agNode), ag) + time(PLUGIN, [], env("DEL", `k${i}`, agNode), ag));
  }
  for (const d of [hlDir, ikDir, agDir]) rmSync(d, { recursive: true, force: true });
  const [h, k, a] = [median(hlTimes), median(ikTimes), median(agTimes)];
  raw.byAllocations.push({ allocations: existing, hostLocalMs: h, directMs: k, agentMs: a });
  rows.push(`| ${existing} | ${h.toFixed(1)} | ${k.toFixed(1)} | ${(k / h).toFixed(2)} | ${a.toFixed(1)} | ${(a / h).toFixed(2)} |`);
}
await agent.stop();
rmSync(join(agent.socketPath, ".."), { recursive: true, force: true });
console.log(`\n${rows.join("\n")}\n\n${RUNS} runs per row (medians), tmpfs, node ${process.version}, ${new Date().toISOString()}`);
const written = writeRawResult(rawEnvelope("cni", "pnpm --filter @ipamkit/example-cni-plugin bench"), {
  runs: RUNS,
  hostLocal: HOST_LOCAL,
  ...raw,
});
if (written !== undefined) console.log(`raw result: ${written}`);
