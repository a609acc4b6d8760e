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

function nodeChurnTable(file: RawFile<Data<"nodeChurn">>): string {
  const { summary, wave, pods, rounds } = file.data;
  const wb = summary.find((x) => x.ipam === "whereabouts");
  const times = (a: number, b: number | undefined) => (b === undefined ? "—" : ratio(a / b));
  const lines = [
    `| IPAM | pods | to Running, median (p90) | × Whereabouts | a wave of ${wave} Running, median | × Whereabouts | a wave freed, median | × Whereabouts | problems |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const x of summary)
    lines.push(
      `| ${x.ipam} | ${x.pods} | ${seconds(x.medianMs / 1000)} (${seconds(x.p90Ms / 1000)}) | ${times(x.medianMs, wb?.medianMs)} (${times(x.p90Ms, wb?.p90Ms)}) | ${seconds(x.waveMedianS)} | ${times(x.waveMedianS, wb?.waveMedianS)} | ${seconds(x.freedMedianS)} | ${times(x.freedMedianS, wb?.freedMedianS)} | ${x.problems === undefined ? "—" : x.problems.length === 0 ? "none" : x.problems.length} |`,
    );
  const shape = pods === undefined || rounds === undefined ? "" : `${pods} pods a round, ${rounds} rounds. `;
  return [...lines, "", `${shape}Raw: ${provenance(file)}.`].join("\n");
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
  const us = (rows: Data<"core">["byCount"], prefix: string) => rows.find((r) => r.case.startsWith(prefix))?.ipamkitUs ?? Number.NaN;
  const { byCount, bySize } = file.data;
  const [holes, dense] = [
    us(byCount, "100k reservations, /8, 1%") / us(byCount, "1k reservations, /8, 1%"),
    us(byCount, "100k reservations, /8, dense") / us(byCount, "1k reservations, /8, dense"),
  ];
  const [v4, v6] = [us(bySize, "/8,") / us(bySize, "/24,"), us(bySize, "/48") / us(bySize, "/24,")];
  return [
    ...part("By reservation count (lowest-free)", byCount),
    ...part("By range size (200 reservations, gateway + one excluded /28)", bySize),
    `Targets: 100k reservations ≤ 2× of 1k — ${holes <= 2 && dense <= 2 ? "met" : "**missed**"} (${ratio(holes)}× with holes, ${ratio(dense)}× dense against dense); a /8 or a /48 ≤ 2× a /24 — ${v4 <= 2 && v6 <= 2 ? "met" : "**missed**"} (${ratio(v4)}×, ${ratio(v6)}×).`,
    "",
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
    "node-churn": src.nodeChurn === undefined ? missing("node-churn.json") : nodeChurnTable(src.nodeChurn),
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
