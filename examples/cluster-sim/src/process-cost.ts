import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { positiveInteger } from "./cli.js";
import { type StoreKind, startCluster } from "./cluster.js";
import { type CniOutcome, limited, PLUGIN, quantile, runCni } from "./cni.js";
import { networkConf } from "./scenario.js";
import { startNativeSpawner } from "./spawner.js";

/**
 * pnpm process-cost — what one CNI process costs on this machine: the built dist/ipamkit and the
 * same source (examples/cni-plugin/src/forwarder.c) linked statically with each C library at hand,
 * every one answered by the same real agent (one node), against `cat` fed the same stdin. Each
 * process's own CPU and minor page faults come from wait4 (src/launcher.c). Interleaved rounds.
 */
const { values } = parseArgs({
  options: {
    store: { type: "string", default: "etcd" },
    calls: { type: "string", default: "500" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "1" },
  },
});
const kind = values.store as StoreKind;
if (kind !== "etcd" && kind !== "kubernetes") {
  process.stderr.write(`process-cost: --store is etcd or kubernetes, not ${values.store}\n`);
  process.exit(2);
}
const count = (name: "calls" | "rounds" | "concurrency"): number => positiveInteger("process-cost", name, values[name]);
const [calls, rounds, concurrency] = [count("calls"), count("rounds"), count("concurrency")];

const SOURCE = join(import.meta.dirname, "..", "..", "cni-plugin", "src", "forwarder.c");
const dir = mkdtempSync(join(tmpdir(), "ipamkit-process-cost-"));

/** The forwarder linked statically by `cc`, beside a link to the Node forwarder it falls back to; undefined without that compiler. */
function variant(label: string, cc: string): { label: string; path: string } | undefined {
  const home = join(dir, cc);
  mkdirSync(home);
  symlinkSync(join(PLUGIN, "..", "ipamkit-node"), join(home, "ipamkit-node"));
  const built = spawnSync(cc, ["-O2", "-static", "-s", "-o", join(home, "ipamkit"), SOURCE], { encoding: "utf8" });
  if (built.error === undefined && built.status === 0) return { label, path: join(home, "ipamkit") };
  process.stderr.write(`process-cost: ${label} left out: ${built.error?.message ?? built.stderr.trim()}\n`);
  return undefined;
}

const binaries = [
  { label: "dist/ipamkit (as built)", path: PLUGIN },
  variant("forwarder.c, static glibc (cc)", "cc"),
  variant("forwarder.c, static musl (musl-gcc)", "musl-gcc"),
].filter((b) => b !== undefined);

interface Tally {
  cpu: number;
  faults: number;
  ms: number[];
  processes: number;
}
const tallies = new Map<string, Tally>();
const tally = (label: string): Tally => {
  const found = tallies.get(label) ?? { cpu: 0, faults: 0, ms: [], processes: 0 };
  tallies.set(label, found);
  return found;
};
const note = (label: string, outcome: Pick<CniOutcome, "cpu" | "faults" | "ms">) => {
  const t = tally(label);
  t.cpu += outcome.cpu ?? Number.NaN;
  t.faults += outcome.faults ?? Number.NaN;
  t.ms.push(outcome.ms);
  t.processes++;
};

const spawner = startNativeSpawner();
const cluster = await startCluster(kind, 1, { spawner });
try {
  const node = cluster.nodes[0];
  if (node === undefined) throw new Error("process-cost: the cluster has no node");
  await cluster.startAgent(node);
  const conf = networkConf(cluster, node, 0);
  const CAT = "cat (no-op, same stdin)";
  for (let round = 0; round < rounds; round++) {
    for (const binary of binaries) {
      for (const command of ["ADD", "DEL"] as const) {
        await limited(
          concurrency,
          Array.from({ length: calls }, (_, i) => async () => {
            const pod = { namespace: "sim", name: `pod-${i}`, uid: `uid-${round}-${i}` };
            const call = { command, containerId: `c-${round}-${i}`, ifName: "net1", pod, conf, plugin: binary.path };
            const outcome = await runCni(call, spawner);
            if (outcome.code !== 0) throw new Error(`${binary.label} ${command}: ${outcome.error}`);
            note(binary.label, outcome);
          }),
        );
      }
      await limited(
        concurrency,
        Array.from({ length: calls }, () => async () => {
          const started = performance.now();
          const { cpu, faults } = await spawner.run({ path: "cat", env: { PATH: process.env.PATH ?? "" }, stdin: conf });
          note(CAT, { cpu, faults, ms: performance.now() - started });
        }),
      );
    }
  }
  const cat = tally(CAT);
  const perProcess = (t: Tally) => (t.cpu * 1000) / t.processes;
  console.log("| process | CPU ms per process | × cat | minor faults per process | wall ms p50 |\n|---|---:|---:|---:|---:|");
  for (const label of [...binaries.map((b) => b.label), CAT]) {
    const t = tally(label);
    console.log(
      `| ${label} | ${perProcess(t).toFixed(3)} | ${(perProcess(t) / perProcess(cat)).toFixed(2)} | ${(t.faults / t.processes).toFixed(1)} | ${quantile(t.ms, 0.5).toFixed(2)} |`,
    );
  }
  console.log(
    `\n${kind}, one agent, ${rounds} interleaved rounds of ${calls} ADDs + ${calls} DELs per binary (and ${calls} cats), ${concurrency} at once, node ${process.version}, ${new Date().toISOString()}`,
  );
} finally {
  await cluster.close();
  await spawner.close();
  rmSync(dir, { recursive: true, force: true });
}
