import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { figureFiles, rawFiles } from "./figures.fixtures.js";
import { generate, REPO_FILES, stale, write } from "./figures.js";
import { RawFileError } from "./raw-set.js";
import { blockIn, MissingMarkersError } from "./render.js";

/** The table rows of a generated block (its header and separator left out). */
const rowsOf = (table: string) =>
  table.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| what") && !line.startsWith("|---"));

describe("the figures in README.md and BENCHMARKS.md", () => {
  it("are what the raw result files in bench/results/ give (run `pnpm bench:figures` after a benchmark)", () => {
    expect(stale(REPO_FILES)).toEqual([]);
  });

  it("name, on every row, the raw file they come from and the commit measured", () => {
    const { readme, benchmarks } = generate(REPO_FILES.results);
    const rows = [...rowsOf(readme.headline ?? ""), ...rowsOf(benchmarks.summary ?? "")];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatch(/\[[\w.-]+\.json\]\(bench\/results\/[\w.-]+\.json\) @ ([0-9a-f]{12}|commit not recorded)/);
  });
});

describe("bench-figures", () => {
  it("generates the headline rows from the raw files, the direct mode beside the agent", () => {
    const files = figureFiles();
    write(files);
    const table = blockIn(readFileSync(files.readme, "utf8"), files.readme, "headline");
    const rows = rowsOf(table);
    expect(rows[0]).toContain("| one CNI ADD on a real kube-apiserver, through the agent | 21.0 ms | Whereabouts v0.9.2: 60.0 ms | 0.35 |");
    expect(rows[1]).toContain(
      "| the same, direct mode (a Node process per call, no agent) | 180 ms | Whereabouts v0.9.2: 60.0 ms | 3.00 |",
    );
    expect(rows[0]).toContain("[whereabouts-interop.json](bench/results/whereabouts-interop.json) @ 0123456789ab");
    // the simulation beside Whereabouts, each phase, against its target
    expect(table).toContain("| 4.0 / 6.0 / 2.0 s | Whereabouts: 40.0 / 80.0 / 40.0 s | 0.10 / 0.075 / 0.050 | ≤ 0.2: met |");
    // steady-state requests per call (the re-create phase; the simulation's pods left out)
    expect(table).toContain("| 3.00 / 2.00 | Whereabouts v0.9.2: 3.00 / 2.00 | 1.00 / 1.00 | ≤ 3 / ≤ 2: met |");
    // a raw file without a commit says so
    expect(table).toContain("[node-churn.json](bench/results/node-churn.json) @ commit not recorded");
    expect(table).toContain(
      "| one pod to Running on a real node, median (p90) | 8.7 s (10.5 s) | Whereabouts: 7.4 s (10.4 s) | 1.19 (1.01) | ≤ 1.0: **missed** |",
    );
    expect(stale(files)).toEqual([]);
  });

  it("fills the real cluster's row when bench/results/cluster-move.json is there, and leaves it out cleanly when not", () => {
    const without = generate(figureFiles().results);
    expect(without.readme.headline).not.toContain("two-node cluster");
    const withIt = generate(figureFiles({ clusterMove: true }).results);
    expect(withIt.readme.headline).toContain(
      "| pods moved on a real two-node cluster: to Running, median; dead sandboxes freed; live addresses freed | 4.2 s; 30 of 30; 0 | Whereabouts: 5.1 s; 12 of 30; 0 | 0.82 | ≤ 1.0: met | [cluster-move.json](bench/results/cluster-move.json) @ fedcba987654 |",
    );
    expect(withIt.benchmarks.summary).toContain("two-node cluster");
  });

  it("finds a figure that disagrees with its raw file, in either file", () => {
    const files = figureFiles();
    write(files);
    const raw = rawFiles() as Record<string, { modes?: { addMedianMs: number }[] }>;
    const interop = raw["whereabouts-interop.json"];
    if (interop?.modes?.[2] !== undefined) interop.modes[2].addMedianMs = 25;
    writeFileSync(join(files.results, "whereabouts-interop.json"), JSON.stringify(interop));
    expect(stale(files)).toEqual([`${files.readme}: headline`, `${files.benchmarks}: summary`, `${files.benchmarks}: interop`]);
    write(files);
    expect(stale(files)).toEqual([]);
    // and a figure edited by hand
    const text = readFileSync(files.benchmarks, "utf8");
    writeFileSync(files.benchmarks, text.replace("| 25.0 ms |", "| 20.0 ms |"));
    expect(stale(files)).toEqual([`${files.benchmarks}: summary`]);
  });

  it("refuses a raw file that is not what its benchmark writes, naming it, and a file without its block", () => {
    const files = figureFiles();
    writeFileSync(join(files.results, "cni.json"), JSON.stringify({ bench: "cni", commit: "x", dirty: false, date: "d", command: "c" }));
    expect(() => generate(files.results)).toThrow(RawFileError);
    expect(() => generate(files.results)).toThrow(/bench\/results\/cni\.json: runs/);
    const other = figureFiles();
    writeFileSync(other.readme, "# no block\n");
    expect(() => stale(other)).toThrow(MissingMarkersError);
  });
});
