import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchBlocks } from "./bench-details.js";
import { detailBlocks } from "./details.js";
import { REPO_ROOT, RESULTS_DIR } from "./raw-file.js";
import { blockIn, readmeTable, summaryTable, withBlock } from "./render.js";
import { README_ROWS, rowsOf, SUMMARY_ROWS } from "./rows.js";
import { loadSources } from "./sources.js";

/** Where the generated blocks live: README's headline table, BENCHMARKS.md's summary and detail tables. */
export interface FigureFiles {
  /** The raw result files (bench/results/). */
  readonly results: string;
  readonly readme: string;
  readonly benchmarks: string;
}

export const REPO_FILES: FigureFiles = {
  results: RESULTS_DIR,
  readme: join(REPO_ROOT, "README.md"),
  benchmarks: join(REPO_ROOT, "BENCHMARKS.md"),
};

/** Every generated block, by file and name, from the raw files in `results`. */
export function generate(results: string): { readme: Record<string, string>; benchmarks: Record<string, string> } {
  const src = loadSources(results);
  return {
    readme: { headline: readmeTable(rowsOf(README_ROWS, src)) },
    benchmarks: { summary: summaryTable(rowsOf(SUMMARY_ROWS, src)), ...detailBlocks(src), ...benchBlocks(src) },
  };
}

/** The blocks whose text in the files differs from what the raw files give (file: block), none when all agree. */
export function stale(files: FigureFiles): string[] {
  const blocks = generate(files.results);
  const out: string[] = [];
  for (const [which, path] of [
    ["readme", files.readme],
    ["benchmarks", files.benchmarks],
  ] as const) {
    const text = readFileSync(path, "utf8");
    for (const [name, content] of Object.entries(blocks[which]))
      if (blockIn(text, path, name) !== content.trim()) out.push(`${path}: ${name}`);
  }
  return out;
}

/** Writes every generated block into its file; returns the blocks that changed. */
export function write(files: FigureFiles): string[] {
  const changed = stale(files);
  const blocks = generate(files.results);
  for (const [which, path] of [
    ["readme", files.readme],
    ["benchmarks", files.benchmarks],
  ] as const) {
    let text = readFileSync(path, "utf8");
    for (const [name, content] of Object.entries(blocks[which])) text = withBlock(text, path, name, content);
    writeFileSync(path, text);
  }
  return changed;
}
