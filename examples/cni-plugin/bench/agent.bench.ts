/**
 * One script, side by side, for each store (file, etcd, Kubernetes through the test API server):
 * the latency of one ADD and one DEL of the built binary in direct mode and through the node-local
 * agent, against one bare `node -e 0` start (interleaved, medians); then 50 concurrent ADD
 * processes on one node, direct and through the agent, with the conflicts they met.
 * Run: pnpm --filter @ipamkit/example-cni-plugin bench:agent   (after pnpm build)
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";

const PLUGIN = join(import.meta.dirname, "..", "dist", "ipamkit");
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const base = existsSync("/dev/shm") ? "/dev/shm" : "/tmp";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const env = (command: string, id: string) => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_IFNAME: "net1",
  CNI_NETNS: "/x",
  CNI_PATH: "/usr/lib/cni",
});

/** One process, timed. Asynchronous: the test API server answers from this process's event loop. */
function time(cmd: string, args: string[], vars: Record<string, string>, input: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(cmd, args, { env: { PATH: process.env.PATH ?? "", ...vars }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => {
      const ms = performance.now() - t;
      if (code !== 0 || out.includes('"code"')) reject(new Error(`${cmd} ${vars.CNI_COMMAND}: ${out}`));
      else resolve(ms);
    });
    child.stdin.end(input);
  });
}

/** One process of a burst: its CNI error code, or 0. */
function run(vars: Record<string, string>, input: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(PLUGIN, [], { env: { PATH: process.env.PATH ?? "", ...vars }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("close", (code) => resolve(code === 0 ? 0 : ((JSON.parse(out) as { code?: number }).code ?? -1)));
    child.stdin.end(input);
  });
}

const dir = mkdtempSync(join(base, "ipamkit-agent-bench-"));
const etcd = await startEtcd();
const kube = await startKubeTestServer({ port: 0 });
const kubeconfig = join(dir, "kubeconfig");
kube.writeKubeconfig(kubeconfig, { namespace: "bench" });
/**
 * A node: its flat file holds the node-level keys (the kubeconfig; with an agent, its socket and
 * agent_required), and its environment names that file (for the binary and the agent it serves).
 */
const nodeOf = (name: string, agentSocket?: string) => {
  const nodeDir = join(dir, `node-${name}`);
  mkdirSync(nodeDir);
  return nodeFlatFile(nodeDir, {
    kubernetes: { kubeconfig },
    ...(agentSocket === undefined ? {} : { agent_socket: agentSocket, agent_required: true }),
  });
};
const directNode = nodeOf("direct");
const agentNode = nodeOf("agent", join(dir, "run", "agent.sock"));
const agent = await startAgentProcess(join(dir, "run", "agent.sock"), { env: agentNode });

const stores: { name: string; ipam: Record<string, unknown>; conflicts?: () => number }[] = [
  { name: "file", ipam: { datastore: "file", data_dir: join(dir, "store") } },
  { name: "etcd", ipam: { datastore: "etcd", etcd_host: etcd.endpoint } },
  {
    name: "kubernetes (test API server)",
    ipam: { datastore: "kubernetes" },
    conflicts: () => kube.stats().byStatus[409] ?? 0,
  },
];
// the mode is the node's (its flat file names the agent or not), the store the network config's
const conf = (storeIpam: Record<string, unknown>, range: string) =>
  JSON.stringify({ cniVersion: "1.1.0", name: "bench", ipam: { type: "ipamkit", range, ...storeIpam } });

const latency: string[] = ["| store | mode | ADD ms | × `node -e 0` | DEL ms | × `node -e 0` |", "|---|---|---:|---:|---:|---:|"];
const burst: string[] = [
  "| store | mode | 50 concurrent ADDs, s | successful ADDs/s | conflicts retried | failed (CNI code) |",
  "|---|---|---:|---:|---:|---:|",
];
try {
  let subnet = 0;
  for (const store of stores) {
    for (const viaAgent of [false, true]) {
      const c = conf(store.ipam, `10.${++subnet}.0.0/16`);
      const on = viaAgent ? agentNode : directNode;
      const node: number[] = [];
      const add: number[] = [];
      const del: number[] = [];
      for (let i = 0; i < RUNS + 2; i++) {
        const n = await time(process.execPath, ["-e", "0"], {}, "");
        const a = await time(PLUGIN, [], { ...env("ADD", `s${i}`), ...on }, c);
        const d = await time(PLUGIN, [], { ...env("DEL", `s${i}`), ...on }, c);
        if (i < 2) continue; // warm-up (the agent opens the store's client on its first call)
        node.push(n);
        add.push(a);
        del.push(d);
      }
      const [mn, ma, md] = [median(node), median(add), median(del)];
      const mode = viaAgent ? "agent" : "direct";
      latency.push(`| ${store.name} | ${mode} | ${ma.toFixed(1)} | ${(ma / mn).toFixed(2)} | ${md.toFixed(1)} | ${(md / mn).toFixed(2)} |`);

      if (store.name === "file") continue;
      // a fresh agent per burst: the conflicts it met are in its "stopped" log line
      const burstSocket = join(dir, "run", `burst-${subnet}.sock`);
      const burstNode = viaAgent ? nodeOf(`burst-${subnet}`, burstSocket) : directNode;
      const burstAgent = viaAgent ? await startAgentProcess(burstSocket, { env: burstNode }) : undefined;
      const b = conf(store.ipam, `10.${++subnet}.0.0/16`);
      const before = store.conflicts?.() ?? 0;
      const t = performance.now();
      const codes = await Promise.all(Array.from({ length: 50 }, (_, i) => run({ ...env("ADD", `b${i}`), ...burstNode }, b)));
      const failed = codes.filter((code) => code !== 0);
      const s = (performance.now() - t) / 1000;
      await burstAgent?.stop();
      const logged = burstAgent === undefined ? undefined : /"conflicts":(\d+),"msg":"ipamkit agent stopped"/.exec(burstAgent.log())?.[1];
      const conflicts = store.conflicts ? String(store.conflicts() - before) : (logged ?? "not observable from outside the processes");
      const failures = failed.length === 0 ? "0" : `${failed.length} (codes ${[...new Set(failed)].join(", ")})`;
      burst.push(`| ${store.name} | ${mode} | ${s.toFixed(2)} | ${((50 - failed.length) / s).toFixed(0)} | ${conflicts} | ${failures} |`);
    }
  }
} finally {
  await agent.stop();
  await etcd.stop();
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`# CNI binary: direct vs the node-local agent (pnpm --filter @ipamkit/example-cni-plugin bench:agent)\n`);
console.log(
  `${latency.join("\n")}\n\n${burst.join("\n")}\n\n${RUNS} runs per latency row (medians, interleaved with \`node -e 0\`), tmpfs, node ${process.version}, ${new Date().toISOString()}`,
);
