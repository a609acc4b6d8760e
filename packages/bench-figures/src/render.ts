import { provenance } from "./raw-set.js";
import type { Row } from "./rows.js";

/** A Markdown table cell: no pipe or line break may escape it. */
const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

const sourceCell = (row: Row) => row.raw.map(provenance).join("; ");

/** README's headline table: what, ipamkit, baseline, ratio, target, raw file and commit. */
export function readmeTable(rows: readonly Row[]): string {
  const lines = ["| what | ipamkit | baseline, same run | ratio | target | raw file @ commit |", "|---|---:|---:|---:|---|---|"];
  for (const r of rows) lines.push(`| ${[r.what, r.ipamkit, r.baseline, r.ratio, r.target ?? "—", sourceCell(r)].map(cell).join(" | ")} |`);
  return lines.join("\n");
}

/** How to run a row's benchmark again: its raw files' commands (as each recorded it). */
const reproduceCell = (row: Row) =>
  [...new Set(row.raw.map((f) => (f.data as { command?: string }).command).filter((c) => c !== undefined))]
    .map((c) => `\`${c}\``)
    .join("; ") || "—";

/** BENCHMARKS.md's summary: the same, with why each baseline is the fairest available and how to run it again. */
export function summaryTable(rows: readonly Row[]): string {
  const lines = [
    "| what | ipamkit | baseline, same run | ratio | target | why this baseline | raw file @ commit | reproduce |",
    "|---|---:|---:|---:|---|---|---|---|",
  ];
  for (const r of rows)
    lines.push(
      `| ${[r.what, r.ipamkit, r.baseline, r.ratio, r.target ?? "—", r.fair ?? "—", sourceCell(r), reproduceCell(r)].map(cell).join(" | ")} |`,
    );
  return lines.join("\n");
}

/** The comment pair a generated block sits between in a Markdown file. */
export function markers(name: string): { begin: string; end: string } {
  return {
    begin: `<!-- bench-figures:${name} — generated from bench/results/ by \`pnpm bench:figures\`; do not edit by hand -->`,
    end: `<!-- /bench-figures:${name} -->`,
  };
}

/** A generated block whose markers a file does not hold (in the right order, once). */
export class MissingMarkersError extends Error {
  readonly code = "MARKERS_MISSING";
  constructor(file: string, name: string) {
    super(`[bench-figures] ${file} has no block "${name}" (${markers(name).begin} … ${markers(name).end})`);
    this.name = "MissingMarkersError";
  }
}

/** The text between a block's markers (trimmed), or MissingMarkersError. */
export function blockIn(text: string, file: string, name: string): string {
  const { begin, end } = markers(name);
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from || text.indexOf(begin, from + 1) >= 0) throw new MissingMarkersError(file, name);
  return text.slice(from + begin.length, to).trim();
}

/** `text` with a block's content replaced by `content`. */
export function withBlock(text: string, file: string, name: string, content: string): string {
  blockIn(text, file, name);
  const { begin, end } = markers(name);
  return `${text.slice(0, text.indexOf(begin) + begin.length)}\n\n${content.trim()}\n\n${text.slice(text.indexOf(end))}`;
}
