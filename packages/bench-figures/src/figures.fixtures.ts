import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FigureFiles } from "./figures.js";
import { markers } from "./render.js";

/** Test fixtures: a results folder of small raw files as the benchmarks write them, and files with the markers. */

const envelope = (bench: string) => ({
  bench,
  commit: "0123456789ab",
  dirty: false,
  date: "2026-12-07T20:00:00.000Z",
  node: "v20.20.2",
  command: `bench ${bench}`,
});

const phase = (name: string, seconds: number, steps: object) => ({
  phase: name,
  seconds,
  adds: 20,
  addP50: 10,
  addP99: 20,
  failed: 0,
  conflicts: 0,
  audit: { heldTwice: 0, lost: 0, leaked: 0 },
  steps,
});
const add = (perAdd: Record<string, number>) => ({
  ADD: { calls: 20, requests: { ...Object.fromEntries(Object.entries(perAdd).map(([k, n]) => [k, n * 20])), "create pods": 2 } },
});
const del = (perDel: Record<string, number>) => ({
  DEL: { calls: 20, requests: Object.fromEntries(Object.entries(perDel).map(([k, n]) => [k, n * 20])) },
});

const run = (ipam: "ipamkit" | "whereabouts", store: string, seconds: number[]) => ({
  ipam,
  ipamLabel: ipam === "ipamkit" ? "ipamkit" : "Whereabouts v0.9.2",
  store,
  nodes: 2,
  agentsPerProcess: 10,
  blockSize: ipam === "ipamkit" ? 16 : null,
  pods: 10,
  networks: 2,
  phases: [
    phase(
      "create all",
      seconds[0] ?? 0,
      add({ "create overlappingrangeipreservations": 1, "update ippools": 1, "get overlappingrangeipreservations": 1.2 }),
    ),
    phase("delete all and re-create", seconds[1] ?? 0, {
      ...del({ "update ippools": 1, "delete overlappingrangeipreservations": 1 }),
      ...add({ "create overlappingrangeipreservations": 1, "update ippools": 1, "get overlappingrangeipreservations": 1 }),
    }),
    phase("delete all", seconds[2] ?? 0, del({ "update ippools": 1, "delete overlappingrangeipreservations": 1 })),
  ],
});

const sim = (runs: object[]) => ({
  ...envelope("cluster-sim"),
  argv: [],
  concurrency: 32,
  spawner: "native",
  floor: [{ label: "no-op Node processes", calls: 10, seconds: 2 }],
  runs,
});

/** The raw files by name; `cluster-move.json` only when asked. */
export function rawFiles(options: { clusterMove?: boolean } = {}): Record<string, object> {
  return {
    "whereabouts-interop.json": {
      ...envelope("whereabouts-interop"),
      whereabouts: "v0.9.2",
      kubernetes: "v1.37.2",
      calls: 50,
      batch: 10,
      modes: [
        {
          id: "whereabouts",
          name: "Whereabouts v0.9.2",
          addMedianMs: 60,
          addP90Ms: 80,
          delMedianMs: 50,
          delP90Ms: 70,
          burstDelS: [10, 11],
          burstAddS: [11, 12],
          failed: 0,
          duplicates: 0,
          left: [],
        },
        {
          id: "direct",
          name: "ipamkit, direct",
          addMedianMs: 180,
          addP90Ms: 200,
          delMedianMs: 170,
          delP90Ms: 210,
          burstDelS: [7, 8],
          burstAddS: [7, 9],
          failed: 0,
          duplicates: 0,
          left: [],
        },
        {
          id: "agent",
          name: "ipamkit, agent",
          addMedianMs: 21,
          addP90Ms: 30,
          delMedianMs: 20,
          delP90Ms: 28,
          burstDelS: [0.9, 1],
          burstAddS: [1, 1.2],
          failed: 0,
          duplicates: 0,
          left: [],
        },
      ],
    },
    "sim-whereabouts.json": sim([run("ipamkit", "kube-apiserver", [4, 6, 2]), run("whereabouts", "kube-apiserver", [40, 80, 40])]),
    "node-churn.json": {
      date: "2026-12-07T06:22:49.203Z",
      pods: 100,
      wave: 25,
      rounds: 2,
      summary: [
        { ipam: "ipamkit", pods: 200, medianMs: 8721, p90Ms: 10523, maxMs: 12489, waveMedianS: 9.65, freedMedianS: 8.98, problems: [] },
        {
          ipam: "whereabouts",
          pods: 200,
          medianMs: 7358,
          p90Ms: 10419,
          maxMs: 12417,
          waveMedianS: 11.39,
          freedMedianS: 11.25,
          problems: [],
        },
      ],
    },
    ...(options.clusterMove === true
      ? {
          "cluster-move.json": {
            commit: "fedcba987654",
            summary: [
              { ipam: "ipamkit", toRunningMedianS: 4.2, deadFreed: 30, deadEntries: 30, freedWhileLive: 0 },
              { ipam: "whereabouts", toRunningMedianS: 5.1, deadFreed: 12, deadEntries: 30, freedWhileLive: 0 },
            ],
          },
        }
      : {}),
  };
}

/** A folder with those raw files, a README and a BENCHMARKS.md holding empty blocks. */
export function figureFiles(options: { clusterMove?: boolean } = {}): FigureFiles {
  const dir = mkdtempSync(join(tmpdir(), "bench-figures-"));
  const results = join(dir, "results");
  mkdirSync(results);
  for (const [name, data] of Object.entries(rawFiles(options))) writeFileSync(join(results, name), JSON.stringify(data));
  const block = (name: string) => `${markers(name).begin}\n${markers(name).end}`;
  writeFileSync(join(dir, "README.md"), `# x\n\n${block("headline")}\n\nmore\n`);
  writeFileSync(
    join(dir, "BENCHMARKS.md"),
    `# y\n\n${block("summary")}\n\n## s\n\n${["simulation", "requests", "beside-whereabouts", "interop", "node-churn", "core", "etcd", "kubernetes", "cni", "power-cycle"].map(block).join("\n\n")}\n`,
  );
  return { results, readme: join(dir, "README.md"), benchmarks: join(dir, "BENCHMARKS.md") };
}
