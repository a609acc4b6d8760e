import { count, ratio } from "./format.js";
import { provenance, type RawFile } from "./raw-set.js";
import type { SimFile } from "./schemas.js";
import { breakdown, nodeFloor, perCall, phaseOf } from "./sim-figures.js";
import type { Sources } from "./sources.js";

/** The detailed tables of BENCHMARKS.md's simulation sections, generated like the summary. */

const STORE_LABEL: Record<string, string> = {
  "kube-apiserver": "real kube-apiserver",
  kubernetes: "Kubernetes stand-in",
  etcd: "etcd",
};
const audited = (a: { heldTwice: number; lost: number; leaked: number }) => `${a.heldTwice} / ${a.lost} / ${a.leaked}`;
const from = (file: RawFile<SimFile>) => `Raw: ${provenance(file)}; \`${file.data.command}\`.`;

/** Per phase of every run: the IPAM's requests per ADD and per DEL, with their breakdown. */
export function requestsTable(files: readonly RawFile<SimFile>[]): string {
  const lines = ["| IPAM, store | phase | per ADD | per DEL |", "|---|---|---|---|"];
  for (const file of files)
    for (const run of file.data.runs)
      for (const phase of run.phases) {
        const [add, del] = [perCall(phase, "ADD"), perCall(phase, "DEL")];
        if (add === undefined && del === undefined) continue;
        lines.push(
          `| ${run.ipamLabel}, ${STORE_LABEL[run.store] ?? run.store}, ${run.networks} networks | ${phase.phase} | ${add === undefined ? "—" : breakdown(add)} | ${del === undefined ? "—" : breakdown(del)} |`,
        );
      }
  return [...lines, "", ...files.map(from)].join("\n");
}

/** Every phase of the full-size runs against the no-op floor of the same run. */
export function simulationTable(file: RawFile<SimFile>): string {
  const lines = [
    "| store | phase | s | × floor | ADDs | ADD p50 / p99 ms | failed | held twice / lost / leaked | CPU s: simulation / CNI / agents / etcd / rest, of the machine's |",
    "|---|---|---:|---:|---:|---:|---:|---|---|",
  ];
  for (const run of file.data.runs) {
    const floor = nodeFloor(file.data, run.pods);
    for (const p of run.phases) {
      const latency = p as { addP50?: number; addP99?: number };
      const c = p.cpu;
      // the rest: what no part counted — on the real kube-apiserver, the API server and its etcd
      const cpu =
        c === undefined
          ? "—"
          : `${[c.harness, c.cni, c.agents, c.store, Math.max(0, c.machine - c.harness - c.cni - c.agents - c.store)].map((x) => x.toFixed(0)).join(" / ")}, of ${c.machine.toFixed(0)}`;
      lines.push(
        `| ${run.ipamLabel === "ipamkit" ? "" : `${run.ipamLabel}, `}${STORE_LABEL[run.store] ?? run.store} | ${p.phase} | ${p.seconds.toFixed(1)} | ${floor === undefined ? "—" : ratio(p.seconds / floor.seconds)} | ${count(p.adds)} | ${p.adds === 0 ? "—" : `${(latency.addP50 ?? 0).toFixed(0)} / ${(latency.addP99 ?? 0).toFixed(0)}`} | ${p.failed} | ${audited(p.audit)} | ${cpu} |`,
      );
    }
  }
  const floors = file.data.floor.map((f) => `${count(f.calls)} ${f.label}: ${f.seconds.toFixed(1)} s`).join("; ");
  return [...lines, "", `Floor of the same run (32 at once): ${floors}.`, from(file)].join("\n");
}

/** ipamkit's phases beside Whereabouts', same kube-apiserver, same pods. */
export function besideWhereaboutsTable(file: RawFile<SimFile>): string {
  const lines = [
    "| phase | ipamkit s | Whereabouts s | ratio | per ADD: ipamkit / Whereabouts | per DEL: ipamkit / Whereabouts | failed | held twice / lost / leaked |",
    "|---|---:|---:|---:|---:|---:|---|---|",
  ];
  const ours = file.data.runs.find((r) => r.ipam === "ipamkit");
  const theirs = file.data.runs.find((r) => r.ipam === "whereabouts");
  if (ours === undefined || theirs === undefined) return `(${file.name} holds no run of both IPAMs)`;
  for (const b of theirs.phases) {
    const a = phaseOf(ours, b.phase);
    if (a === undefined) continue;
    const per = (verb: "ADD" | "DEL") => {
      const [x, y] = [perCall(a, verb), perCall(b, verb)];
      return x === undefined || y === undefined ? "—" : `${x.total.toFixed(2)} / ${y.total.toFixed(2)}`;
    };
    lines.push(
      `| ${b.phase} | ${a.seconds.toFixed(1)} | ${b.seconds.toFixed(1)} | ${ratio(a.seconds / b.seconds)} | ${per("ADD")} | ${per("DEL")} | ${a.failed} / ${b.failed} | ${audited(a.audit)}; ${audited(b.audit)} |`,
    );
  }
  return [...lines, "", from(file)].join("\n");
}

/** The generated blocks of BENCHMARKS.md besides the summary, by name (those whose files are there). */
export function detailBlocks(src: Sources): Record<string, string> {
  const missing = (name: string) => `(not measured yet: bench/results/${name} is missing)`;
  return {
    simulation: src.sim === undefined ? missing("sim-10-networks.json") : simulationTable(src.sim),
    requests: requestsTable([src.sim, src.simWhereabouts].filter((f) => f !== undefined)),
    "beside-whereabouts": src.simWhereabouts === undefined ? missing("sim-whereabouts.json") : besideWhereaboutsTable(src.simWhereabouts),
  };
}
