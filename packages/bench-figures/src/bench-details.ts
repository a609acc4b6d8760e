import { count, ms, ratio, span } from "./format.js";
import { provenance, type RawFile } from "./raw-set.js";
import type { Sources } from "./sources.js";

/** The detailed tables of BENCHMARKS.md's other sections, each from its benchmark's raw file. */

type Data<K extends keyof Sources> = NonNullable<Sources[K]>["data"];
const from = (file: RawFile<{ command: string; commit: string; dirty: boolean }>) => `Raw: ${provenance(file)}; \`${file.data.command}\`.`;
const seconds = (x: number) => `${x.toFixed(1)} s`;

function interopTable(file: RawFile<Data<"interop">>): string {
  const { modes, calls, batch } = file.data;
  const wb = modes.find((m) => m.id === "whereabouts");
  const lines = [
    `| binary | ADD, median (p90) | × Whereabouts | DEL, median (p90) | ${calls} ADDs ${batch} at a time | × Whereabouts | ${calls} DELs ${batch} at a time | failed, duplicates, left after DELs |`,
    "|---|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const m of modes) {
    const times = wb === undefined ? "—" : ratio(m.addMedianMs / wb.addMedianMs);
    const burst =
      wb === undefined
        ? "—"
        : span(
            m.burstAddS.map((x, i) => x / (wb.burstAddS[i] ?? Number.NaN)),
            ratio,
          );
    lines.push(
      `| ${m.name} | ${ms(m.addMedianMs)} (${ms(m.addP90Ms)}) | ${times} | ${ms(m.delMedianMs)} (${ms(m.delP90Ms)}) | ${span(m.burstAddS, seconds)} | ${burst} | ${span(m.burstDelS, seconds)} | ${m.failed}, ${m.duplicates}, ${m.left.length === 0 ? "nothing" : m.left.join("; ")} |`,
    );
  }
  return [...lines, "", from(file)].join("\n");
}

function coreTable(file: RawFile<Data<"core">>): string {
  const part = (title: string, rows: Data<"core">["byCount"]) => {
    const first = rows[0]?.ipamkitUs ?? Number.NaN;
    return [
      `${title}:`,
      "",
      "| case | ipamkit µs/op | × first row | linear-scan baseline µs/op | baseline ÷ ipamkit |",
      "|---|---:|---:|---:|---:|",
      ...rows.map(
        (r) =>
          `| ${r.case} | ${r.ipamkitUs.toFixed(2)} | ${ratio(r.ipamkitUs / first)} | ${r.linearScanUs.toFixed(2)} | ${count(r.linearScanUs / r.ipamkitUs)} |`,
      ),
      "",
    ];
  };
  return [
    ...part("By reservation count (lowest-free)", file.data.byCount),
    ...part("By range size (200 reservations, gateway + one excluded /28)", file.data.bySize),
    from(file),
  ].join("\n");
}

function storeTable(file: RawFile<Data<"etcd"> | Data<"kubernetes">>, baseId: string): string {
  const base = file.data.rows.find((r) => r.id === baseId)?.seconds ?? Number.NaN;
  const lines = ["| case | s | ops/s | × baseline | conflicts retried |", "|---|---:|---:|---:|---:|"];
  for (const r of file.data.rows)
    lines.push(
      `| ${r.name} | ${r.seconds.toFixed(2)} | ${count(file.data.n / r.seconds)} | ${ratio(r.seconds / base)} | ${r.conflicts ?? "—"} |`,
    );
  return [...lines, "", from(file)].join("\n");
}

function objectSizeTable(file: RawFile<Data<"kubernetes">>): string {
  const lines = ["| IPPool object (JSON) with | 1k allocations | 10k allocations | most under 1.5 MiB |", "|---|---:|---:|---:|"];
  for (const o of file.data.objectBytes)
    lines.push(
      `| ${o.entries === "ipamkit" ? "ipamkit's entries (id, podref, ifname, poduid, created)" : "Whereabouts' entries (id, podref, ifname)"} | ${count(o.at1k / 1024)} KiB | ${count(o.at10k / 1024)} KiB | ${count(o.largestUnderLimit)} |`,
    );
  return lines.join("\n");
}

function cniTable(file: RawFile<Data<"cni">>): string {
  const { single, byAllocations } = file.data;
  const times = (x: number) => ratio(x / single.nodeMs);
  return [
    "| call (file store, 10 allocations) | median | × `node -e 0` |",
    "|---|---:|---:|",
    `| \`node -e 0\` | ${ms(single.nodeMs)} | 1.00 |`,
    `| ADD, direct mode | ${ms(single.directAddMs)} | ${times(single.directAddMs)} |`,
    `| DEL, direct mode | ${ms(single.directDelMs)} | ${times(single.directDelMs)} |`,
    `| ADD through the agent | ${ms(single.agentAddMs)} | ${times(single.agentAddMs)} |`,
    `| DEL through the agent | ${ms(single.agentDelMs)} | ${times(single.agentDelMs)} |`,
    "",
    "| allocations held | host-local ADD+DEL | direct mode ADD+DEL | ÷ host-local | through the agent | ÷ host-local |",
    "|---:|---:|---:|---:|---:|---:|",
    ...byAllocations.map(
      (r) =>
        `| ${count(r.allocations)} | ${ms(r.hostLocalMs)} | ${ms(r.directMs)} | ${ratio(r.directMs / r.hostLocalMs)} | ${ms(r.agentMs)} | ${ratio(r.agentMs / r.hostLocalMs)} |`,
    ),
    "",
    `Medians of ${file.data.runs} runs per row. ${from(file)}`,
  ].join("\n");
}

function powerCycleTable(file: RawFile<Data<"powerCycle">>): string {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const reqs = (xs: number[]) => (xs.length === 0 ? "—" : count(median(xs) ?? Number.NaN));
  const lines = [
    "| store | step | a read each: wall s / CPU s / requests | bulk reads: wall s / CPU s / requests |",
    "|---|---|---:|---:|",
  ];
  type Way = { wallMs: number; cpuMs: number; requests: number[] };
  for (const st of file.data.stores)
    for (const [step, ways] of [
      ["observing every pool", st.observing],
      [`a full pass, ${count(st.fullPass.released)} released`, st.fullPass],
    ] as [string, { readEach: Way; bulk: Way }][])
      lines.push(
        `| ${st.store} | ${step} | ${(ways.readEach.wallMs / 1000).toFixed(2)} / ${(ways.readEach.cpuMs / 1000).toFixed(2)} / ${reqs(ways.readEach.requests)} | ${(ways.bulk.wallMs / 1000).toFixed(2)} / ${(ways.bulk.cpuMs / 1000).toFixed(2)} / ${reqs(ways.bulk.requests)} |`,
      );
  return [...lines, "", "CPU: the bench process's (on the stand-in, its server's too; etcd's not counted).", from(file)].join("\n");
}

/** The generated blocks of BENCHMARKS.md's benchmark sections, by name (a note where a raw file is missing). */
export function benchBlocks(src: Sources): Record<string, string> {
  const missing = (name: string) => `(not measured on the current code yet: bench/results/${name} is missing)`;
  return {
    interop: src.interop === undefined ? missing("whereabouts-interop.json") : interopTable(src.interop),
    core: src.core === undefined ? missing("core.json") : coreTable(src.core),
    etcd: src.etcd === undefined ? missing("etcd.json") : storeTable(src.etcd, "bare-cas"),
    kubernetes:
      src.kubernetes === undefined
        ? missing("kubernetes.json")
        : `${storeTable(src.kubernetes, "bare-puts-store")}\n\n${objectSizeTable(src.kubernetes)}`,
    cni: src.cni === undefined ? missing("cni.json") : cniTable(src.cni),
    "power-cycle": src.powerCycle === undefined ? missing("reconcile-power-cycle.json") : powerCycleTable(src.powerCycle),
  };
}
