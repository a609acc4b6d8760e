/**
 * What an agent start costs, by the store code it loads (`--warm`): the agent process's own CPU
 * (from /proc) once its socket answers and its warm-up is done, for no store, the file store, the
 * etcd bundle (with and without its V8 code cache) and the Kubernetes bundle; interleaved, medians.
 * A power-cycled node pays this before its first call; with one agent process per node, 100 nodes
 * pay it 100 times on the same cores.
 * Run: pnpm --filter @ipamkit/example-cni-plugin bench:agent-start   (after pnpm build)
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

const DIST = join(import.meta.dirname, "..", "dist");
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const base = existsSync("/dev/shm") ? "/dev/shm" : "/tmp";
const dir = mkdtempSync(join(base, "ipamkit-agent-start-"));
// the same build without the etcd bundle's code cache: the agent loads bundles from its own directory
const uncached = join(dir, "dist-uncached");
cpSync(DIST, uncached, { recursive: true });
rmSync(join(uncached, "ipamkit-etcd.cjs.v8cache"));

const TICKS = 100; // USER_HZ
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
};
const answers = (socket: string) =>
  new Promise<boolean>((resolve) => {
    const c = connect(socket, () => {
      c.end();
      resolve(true);
    });
    c.on("error", () => resolve(false));
  });

/** One agent start: CPU seconds once its socket answers and its warm-up has had time to finish. */
async function start(agent: string, warm: string | undefined, n: number): Promise<number> {
  const socket = join(dir, `agent-${n}.sock`);
  const args = ["--socket", socket, "--node-name", "bench", "--log-level", "warn", ...(warm === undefined ? [] : ["--warm", warm])];
  const child = spawn(agent, args, { stdio: "ignore", env: { PATH: process.env.PATH ?? "" } });
  try {
    const deadline = Date.now() + 20_000;
    while (!(existsSync(socket) && (await answers(socket)))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`agent ${args.join(" ")} did not start`);
      await new Promise((r) => setTimeout(r, 5));
    }
    // --warm loads in the background after the socket opens: wait until the CPU stops moving
    let last = -1;
    for (let now = cpuSeconds(child.pid as number); now !== last; now = cpuSeconds(child.pid as number)) {
      last = now;
      await new Promise((r) => setTimeout(r, 300));
    }
    return last;
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

const cases: { name: string; agent: string; warm?: string }[] = [
  { name: "no store code (`ipamkit-agent` alone)", agent: join(DIST, "ipamkit-agent") },
  { name: "`--warm file`", agent: join(DIST, "ipamkit-agent"), warm: "file" },
  { name: "`--warm etcd` (ipamkit-etcd.cjs + its code cache)", agent: join(DIST, "ipamkit-agent"), warm: "etcd" },
  { name: "`--warm etcd`, the bundle's code cache removed", agent: join(uncached, "ipamkit-agent"), warm: "etcd" },
  { name: "`--warm kubernetes` (ipamkit-kubernetes.cjs + its code cache)", agent: join(DIST, "ipamkit-agent"), warm: "kubernetes" },
];
const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
try {
  let n = 0;
  for (let round = 0; round < RUNS; round++) {
    for (const c of round % 2 === 0 ? cases : [...cases].reverse()) samples.get(c.name)?.push(await start(c.agent, c.warm, n++));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const bare = median(samples.get(cases[0]?.name ?? "") ?? []);
console.log(`\n| agent start | CPU s (median of ${RUNS}) | min–max | × no store code |\n|---|---:|---:|---:|`);
for (const c of cases) {
  const xs = samples.get(c.name) ?? [];
  console.log(
    `| ${c.name} | ${median(xs).toFixed(2)} | ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)} | ${(median(xs) / bare).toFixed(2)} |`,
  );
}
console.log(`\nnode ${process.version}, CPU from /proc/<pid>/stat (10 ms ticks), ${new Date().toISOString()}`);
