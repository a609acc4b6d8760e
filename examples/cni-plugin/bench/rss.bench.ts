/**
 * The memory the chart's two long-running programs need, for its `resources`: the agent
 * (dist/ipamkit-agent, with --warm and --metrics-address as the DaemonSet runs it) before and after
 * 1000 ADDs through the real binary, and the reconciler (examples/cron-reconciler/dist/main.js,
 * with --metrics-address as the Deployment runs it) after full passes over those 1000
 * reservations — each on the etcd store and on the Kubernetes store (the test API server), with
 * /metrics scraped meanwhile as Prometheus would; and the token watcher (ipamkit-install --watch).
 * RSS and its peak (VmHWM) from /proc.
 * Run: pnpm --filter @ipamkit/example-cni-plugin bench:rss   (after pnpm build); raw output: bench/results/agent-rss.md
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { startAgentProcess } from "../test/agent-process.js";

const PLUGIN = join(import.meta.dirname, "..", "dist", "ipamkit");
const RECONCILER = join(import.meta.dirname, "..", "..", "cron-reconciler", "dist", "main.js");
const INSTALLER = join(import.meta.dirname, "..", "..", "install", "dist", "ipamkit-install");
const ADDS = Number(process.env.BENCH_ADDS ?? 1000);
const CONCURRENCY = 8;
const base = existsSync("/dev/shm") ? "/dev/shm" : "/tmp";

/** VmRSS and VmHWM of a process, MiB. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** One ADD through the built binary; rejects with its output unless it succeeded. */
function add(conf: string, id: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PLUGIN, [], {
      env: { PATH: process.env.PATH ?? "", CNI_COMMAND: "ADD", CNI_CONTAINERID: id, CNI_IFNAME: "net1", CNI_NETNS: "/x", CNI_PATH: "/x" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`ADD ${id}: ${out}`))));
    child.stdin.end(conf);
  });
}

/** The URL a program logged for its metrics listener. */
async function metricsUrl(log: () => string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const line = log()
      .split("\n")
      .find((l) => l.includes('"msg":"metrics listening"'));
    if (line !== undefined) return (JSON.parse(line) as { url: string }).url;
    if (Date.now() > deadline) throw new Error(`no metrics listener:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();

/** The reconciler on a schedule of every 5 s, until it has finished `passes` passes; its memory then. */
async function reconcilerMemory(args: string[], passes: number): Promise<{ rss: number; peak: number; reservations: string }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [RECONCILER, ...args, "--schedule", "*/5 * * * * *", "--leader-election", "false", "--grace", "1h", "--metrics-address", "127.0.0.1:0"],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "" } },
  );
  let output = "";
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  try {
    const url = await metricsUrl(() => output);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const text = await scrape(url);
      const done = Number(/^ipamkit_reconciler_passes_total\{result="ok"\} (\d+)/m.exec(text)?.[1] ?? 0);
      if (done >= passes) {
        const reservations = /^ipamkit_reconciler_reservations (\d+)/m.exec(text)?.[1] ?? "?";
        return { ...memory(child.pid as number), reservations };
      }
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the reconciler did not finish ${passes} passes:\n${output}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    child.kill("SIGTERM");
  }
}

/** The token watcher (ipamkit-install --watch, the DaemonSet's third container) after 20 s of passes every second. */
async function watcherMemory(dir: string): Promise<{ rss: number; peak: number }> {
  const sa = join(dir, "sa");
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, "token"), "token");
  writeFileSync(join(sa, "ca.crt"), "CA");
  const child = spawn(
    INSTALLER,
    ["--host-root", join(dir, "host"), "--service-account-dir", sa, "--skip-binaries", "--watch", "--interval-ms", "1000"],
    {
      stdio: ["ignore", "ignore", "inherit"],
      env: { PATH: process.env.PATH ?? "", KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
    },
  );
  await new Promise((r) => setTimeout(r, 20_000));
  const m = memory(child.pid as number);
  child.kill("SIGTERM");
  return m;
}

const dir = mkdtempSync(join(base, "ipamkit-rss-bench-"));
writeFileSync(join(dir, "whereabouts.conf"), "{}");
const etcd = await startEtcd();
const kube = await startKubeTestServer({ port: 0 });
const kubeconfig = join(dir, "kubeconfig");
kube.writeKubeconfig(kubeconfig, { namespace: "bench" });

const rows = [
  "| store | agent RSS at start, MiB | after 1000 ADDs, MiB | agent peak, MiB | reconciler RSS after 3 passes, MiB | reconciler peak, MiB | reservations seen |",
  "|---|---:|---:|---:|---:|---:|---:|",
];
const stores = [
  {
    name: "etcd",
    warm: "etcd",
    ipam: { datastore: "etcd", etcd_host: etcd.endpoint },
    reconciler: ["--kubeconfig", kubeconfig, "--datastore", "etcd", "--etcd-endpoints", etcd.endpoint],
  },
  {
    name: "kubernetes (test API server)",
    warm: "kubernetes",
    ipam: { datastore: "kubernetes", kubernetes: { kubeconfig } },
    reconciler: ["--kubeconfig", kubeconfig, "--namespace", "bench"],
  },
];
try {
  let subnet = 0;
  for (const store of stores) {
    const agent = await startAgentProcess(join(dir, "run", `${store.warm}.sock`), {
      args: ["--warm", store.warm, "--metrics-address", "127.0.0.1:0", "--log-level", "info"],
    });
    const pid = agent.child.pid as number;
    const url = await metricsUrl(agent.log);
    await new Promise((r) => setTimeout(r, 2_000)); // --warm has loaded the store's code
    const start = memory(pid);
    const conf = JSON.stringify({
      cniVersion: "1.1.0",
      name: `rss-${store.warm}`,
      ipam: {
        type: "ipamkit",
        range: `10.${++subnet}.0.0/20`,
        configuration_path: dir,
        ...store.ipam,
        agent_socket: agent.socketPath,
        agent_required: true,
      },
    });
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < ADDS) {
          const i = next++;
          await add(conf, `rss-${store.warm}-${i}`);
          if (i % 100 === 0) await scrape(url);
        }
      }),
    );
    await scrape(url);
    const after = memory(pid);
    await agent.stop();
    const reconciler = await reconcilerMemory(store.reconciler, 3);
    rows.push(
      `| ${store.name} | ${start.rss.toFixed(1)} | ${after.rss.toFixed(1)} | ${after.peak.toFixed(1)} | ${reconciler.rss.toFixed(1)} | ${reconciler.peak.toFixed(1)} | ${reconciler.reservations} |`,
    );
  }
  const watcher = await watcherMemory(dir);
  rows.push("", "| token watcher (ipamkit-install --watch) | RSS after 20 s, MiB | peak, MiB |", "|---|---:|---:|");
  rows.push(`| kubernetes store | ${watcher.rss.toFixed(1)} | ${watcher.peak.toFixed(1)} |`);
} finally {
  await etcd.stop();
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log("# Agent and reconciler memory (pnpm --filter @ipamkit/example-cni-plugin bench:rss)\n");
console.log(
  `${rows.join("\n")}\n\n${ADDS} ADDs through dist/ipamkit, ${CONCURRENCY} at a time, /metrics scraped every 100; RSS and VmHWM from /proc/<pid>/status; node ${process.version}, ${new Date().toISOString()}`,
);
