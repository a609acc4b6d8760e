#!/usr/bin/env node
/**
 * Benchmark of @ipamkit/storage-file: `pnpm --filter @ipamkit/storage-file bench`
 * (or `node bench/file-store.bench.mjs` in this package). Bounded: about a minute on 2 vCPUs.
 *
 * 1. In-process: one `ipam.allocate` then `ipam.release` of the same key (createIpam +
 *    createFileStore, default policy lowest-free, overlapping-range protection on), on a pool
 *    pre-filled with 10, 1 000 and 10 000 reservations; on tmpfs (/dev/shm) and on disk.
 * 2. 8 OS processes doing the same at once on one pool: throughput and latency.
 * 3. Per CNI invocation, against host-local (containernetworking-plugins, /usr/lib/cni/host-local):
 *    one process for ADD, one for DEL, each way; pools pre-filled with 10 and 1 000.
 *
 * The sources are bundled with esbuild (condition @ipamkit/source) into a temp dir first, so no
 * build is needed. Prints markdown tables to stdout, progress to stderr.
 * Env: BENCH_DISK_DIR (default: the OS temp dir, or /var/tmp when that is tmpfs), BENCH_QUICK=1.
 */
import { execFileSync, fork, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const PKG = dirname(dirname(fileURLToPath(import.meta.url)));
const QUICK = process.env.BENCH_QUICK === "1";
const HOST_LOCAL = "/usr/lib/cni/host-local";
const RANGE = "10.0.0.0/16";
const SIZES = [10, 1000, 10000];
const CNI_SIZES = [10, 1000];
const PROCS = 8;

const log = (...args) => console.error("[bench]", ...args);

function fsType(dir) {
  try {
    return execFileSync("stat", ["-f", "-c", "%T", dir], { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
}

function diskBase() {
  if (process.env.BENCH_DISK_DIR) return process.env.BENCH_DISK_DIR;
  for (const candidate of [tmpdir(), "/var/tmp", PKG]) if (fsType(candidate) !== "tmpfs") return candidate;
  return tmpdir();
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { n: s.length, median: at(0.5), p90: at(0.9) };
}

const ms = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

async function bundle(outDir) {
  const common = { bundle: true, platform: "node", format: "esm", target: "node20", conditions: ["@ipamkit/source"], logLevel: "silent" };
  const lib = join(outDir, "lib.mjs");
  await build({
    ...common,
    stdin: { contents: 'export * from "@ipamkit/core"; export * from "./src/index.ts";', resolveDir: PKG, loader: "ts" },
    outfile: lib,
  });
  const entries = {};
  for (const name of ["alloc-worker", "cni-op"]) {
    entries[name] = join(outDir, `${name}.mjs`);
    await build({ ...common, entryPoints: [join(PKG, "src", "fixtures", `${name}.ts`)], outfile: entries[name] });
  }
  return { lib: await import(lib), ...entries };
}

/** Writes a pool of `size` reservations (offsets 1..size, as lowest-free would) straight into the store. */
async function prefill(m, dir, size) {
  const range = m.parseRange({ range: RANGE });
  const store = m.createFileStore({ dir });
  const createdAt = new Date().toISOString();
  const reservations = Array.from({ length: size }, (_, i) => ({
    offset: BigInt(i + 1),
    key: m.attachmentKey({ containerId: `prefill-${i}`, ifName: "eth0" }),
    podRef: `bench/pod-${i}`,
    createdAt,
  }));
  await store.writePool(
    { network: "", cidr: range.cidr.text },
    m.Pool.fromReservations(range.cidr, reservations, { lastOffset: BigInt(size) }),
    undefined,
  );
  await store.close();
}

async function inProcess(m, base, size, runs) {
  const dir = await mkdtemp(join(base, "ipamkit-bench-"));
  try {
    await prefill(m, dir, size);
    const ipam = m.createIpam({ store: m.createFileStore({ dir }) });
    const range = m.parseRange({ range: RANGE });
    const samples = [];
    const warmup = 5;
    for (let i = 0; i < warmup + runs; i++) {
      const key = m.attachmentKey({ containerId: `op-${i}`, ifName: "eth0" });
      const started = performance.now();
      await ipam.allocate({ network: "", ranges: [range], key });
      await ipam.release({ network: "", ranges: [range], key });
      if (i >= warmup) samples.push(performance.now() - started);
    }
    return stats(samples);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function multiProcess(m, worker, base, size, each) {
  const dir = await mkdtemp(join(base, "ipamkit-bench-"));
  try {
    await prefill(m, join(dir, "store"), size);
    const children = Array.from({ length: PROCS }, (_, i) => {
      const child = fork(worker, [join(dir, "store"), String(i), String(each), "cycle", RANGE], {
        stdio: ["ignore", "pipe", "inherit", "ipc"],
      });
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      const ready = new Promise((resolve, reject) => {
        child.once("message", resolve);
        child.once("exit", (code) => reject(new Error(`worker exited with ${code} before it was ready`)));
      });
      const done = new Promise((resolve, reject) =>
        child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`worker exited with ${code}`)))),
      );
      return { child, ready, done };
    });
    let results;
    let wall;
    try {
      await Promise.all(children.map((c) => c.ready));
      const started = performance.now();
      for (const c of children) c.child.send("go");
      results = await Promise.all(children.map((c) => c.done));
      wall = performance.now() - started;
    } catch (error) {
      for (const c of children) c.child.kill("SIGKILL");
      await Promise.allSettled(children.map((c) => c.done));
      throw error;
    }
    // Every op released what it allocated: the pool must be exactly the pre-filled one again.
    const after = await m.createFileStore({ dir: join(dir, "store") }).readPool({ network: "", cidr: RANGE });
    if (after?.pool.size !== size) throw new Error(`pool holds ${after?.pool.size} reservations after the run, expected ${size}`);
    const latencies = results.flatMap((r) => r.latencies);
    return {
      ...stats(latencies),
      ops: latencies.length,
      throughput: (latencies.length / wall) * 1000,
      conflicts: results.reduce((n, r) => n + r.conflicts, 0),
      wall,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(cmd, args, env, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { PATH: process.env.PATH, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(" ")} exited with ${code}: ${err}${out}`)),
    );
    child.stdin.end(input ?? "");
  });
}

async function timed(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** host-local: ADD then DEL as separate plugin invocations; dataDir pre-filled by writing its files. */
async function hostLocal(base, size, runs) {
  const dir = await mkdtemp(join(base, "ipamkit-bench-hl-"));
  try {
    const dataDir = join(dir, "data");
    const netDir = join(dataDir, "bench");
    await mkdir(netDir, { recursive: true });
    // host-local's files: one per IP named by the address, "<containerID>\r\n<ifname>"; .1 is the gateway.
    for (let i = 0; i < size; i++) {
      const n = i + 2;
      await writeFile(join(netDir, `10.0.${n >> 8}.${n & 255}`), `prefill-${i}\r\neth0`);
    }
    if (size > 0) {
      const n = size + 1;
      await writeFile(join(netDir, "last_reserved_ip.0"), `10.0.${n >> 8}.${n & 255}`);
    }
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: "bench",
      type: "host-local",
      ipam: { type: "host-local", ranges: [[{ subnet: RANGE }]], dataDir },
    });
    const env = (command, id) => ({
      CNI_COMMAND: command,
      CNI_CONTAINERID: id,
      CNI_NETNS: "/nonexistent",
      CNI_IFNAME: "eth0",
      CNI_PATH: "/usr/lib/cni",
    });
    const add = [];
    const del = [];
    for (let i = 0; i < 3 + runs; i++) {
      const id = `op-${i}`;
      const a = await timed(() => run(HOST_LOCAL, [], env("ADD", id), conf));
      const d = await timed(() => run(HOST_LOCAL, [], env("DEL", id), conf));
      if (i >= 3) {
        add.push(a);
        del.push(d);
      }
    }
    return { add: stats(add), del: stats(del), both: stats(add.map((a, i) => a + del[i])) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** ipamkit the same way: one `node` process (bundled) for ADD, one for DEL. */
async function oursPerProcess(m, cniOp, base, size, runs) {
  const dir = await mkdtemp(join(base, "ipamkit-bench-cni-"));
  try {
    await prefill(m, dir, size);
    const add = [];
    const del = [];
    for (let i = 0; i < 3 + runs; i++) {
      const id = `op-${i}`;
      const a = await timed(() => run(process.execPath, [cniOp, dir, "ADD", id, RANGE]));
      const d = await timed(() => run(process.execPath, [cniOp, dir, "DEL", id, RANGE]));
      if (i >= 3) {
        add.push(a);
        del.push(d);
      }
    }
    return { add: stats(add), del: stats(del), both: stats(add.map((a, i) => a + del[i])) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  const started = performance.now();
  const work = await mkdtemp(join(tmpdir(), "ipamkit-bench-bundle-"));
  try {
    const { lib: m, "alloc-worker": worker, "cni-op": cniOp } = await bundle(work);
    const bases = [];
    if (existsSync("/dev/shm")) bases.push({ label: "tmpfs (/dev/shm)", dir: "/dev/shm" });
    const disk = diskBase();
    bases.push({ label: `disk (${disk}, ${fsType(disk)})`, dir: disk });
    const runsFor = (size) => (QUICK ? 20 : size >= 10000 ? 60 : 300);
    const out = [];
    out.push("## @ipamkit/storage-file benchmark", "");
    out.push(`Node ${process.version}, ${cpus().length} CPU(s) (${cpus()[0]?.model ?? "?"}), ${new Date().toISOString()}.`, "");

    out.push("### allocate + release per op, in-process (createIpam + createFileStore, lowest-free, overlapping-range protection on)", "");
    out.push("| filesystem | pool size | runs | median ms/op | p90 ms/op |", "| --- | ---: | ---: | ---: | ---: |");
    for (const base of bases) {
      for (const size of SIZES) {
        log(`in-process ${base.label} size ${size}`);
        const r = await inProcess(m, base.dir, size, runsFor(size));
        out.push(`| ${base.label} | ${size} | ${r.n} | ${ms(r.median)} | ${ms(r.p90)} |`);
      }
    }
    out.push("");

    const each = QUICK ? 5 : 25;
    out.push(`### ${PROCS} processes at once, each ${each} × (allocate + release) on one pool`, "");
    out.push(
      "| filesystem | pool size | ops | wall s | throughput ops/s | median ms/op | p90 ms/op | conflicts retried |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const base of bases) {
      for (const size of [10, 1000]) {
        log(`${PROCS} processes ${base.label} size ${size}`);
        const r = await multiProcess(m, worker, base.dir, size, each);
        out.push(
          `| ${base.label} | ${size} | ${r.ops} | ${(r.wall / 1000).toFixed(2)} | ${r.throughput.toFixed(0)} | ${ms(r.median)} | ${ms(r.p90)} | ${r.conflicts} |`,
        );
      }
    }
    out.push("");

    const cniRuns = QUICK ? 5 : 30;
    out.push(`### One process per CNI call (ADD, then DEL) vs host-local`, "");
    if (!existsSync(HOST_LOCAL)) {
      out.push(`host-local not found at ${HOST_LOCAL} (apt-get install -y containernetworking-plugins): baseline skipped.`, "");
    }
    const startup = [];
    for (let i = 0; i < cniRuns; i++) startup.push(await timed(() => run(process.execPath, ["-e", "0"])));
    const nodeStart = stats(startup).median;
    out.push(
      "| filesystem | pool size | runs | host-local ADD+DEL median ms | ipamkit ADD+DEL median ms | ratio ipamkit/host-local | host-local p90 | ipamkit p90 | ipamkit in-process median ms |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const base of bases) {
      for (const size of CNI_SIZES) {
        log(`per-process ${base.label} size ${size}`);
        const hl = existsSync(HOST_LOCAL) ? await hostLocal(base.dir, size, cniRuns) : undefined;
        const ours = await oursPerProcess(m, cniOp, base.dir, size, cniRuns);
        const inProc = await inProcess(m, base.dir, size, QUICK ? 20 : 100);
        out.push(
          `| ${base.label} | ${size} | ${cniRuns} | ${hl ? ms(hl.both.median) : "-"} | ${ms(ours.both.median)} | ${hl ? `${(ours.both.median / hl.both.median).toFixed(1)}×` : "-"} | ${hl ? ms(hl.both.p90) : "-"} | ${ms(ours.both.p90)} | ${ms(inProc.median)} |`,
        );
      }
    }
    out.push("");
    out.push(
      `Start-up of a bare \`node -e 0\` on this machine: median ${ms(nodeStart)} ms (${cniRuns} runs); an ipamkit ADD+DEL pays it twice.`,
      "",
    );
    out.push(
      `Runs: the \`runs\` column per row (after 5 warm-up ops in-process, 3 per CNI row). Pools are pre-filled by writing the pool (ipamkit) or the per-IP files (host-local) directly; ipamkit's pre-filled addresses have no claim files (a claim is only read for the address being allocated). ipamkit per-process times include Node start-up and loading the bundle. Total bench time ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    );
    console.log(out.join("\n"));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
