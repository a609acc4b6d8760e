import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { compileC, SRC } from "../test/compile-c.js";

// Issue 47: coverage-guided fuzzing of the static forwarder's parsers (fuzz/forwarder-fuzz.c: the
// JSON reader, the route decision, the agent's answer) under AddressSanitizer and UBSan, every
// finding fatal. Bounded here (FUZZ_SECONDS, 20 s by default; 600 s under `pnpm reliability`), from
// the checked-in corpus (fuzz/corpus/, never written to: new inputs go to a copy). Then the line
// coverage of the three headers over the final corpus (llvm-cov). RELIABILITY.md quotes a run.

const SECONDS = Number(process.env.FUZZ_SECONDS ?? (process.env.RELIABILITY === "full" ? 600 : 20));
const FUZZ = join(import.meta.dirname, "..", "fuzz");

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "ipamkit-fuzz-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** libFuzzer's final numbers: executions, edges covered, features, corpus size, and the edges instrumented. */
function stats(output: string): { execs: number; cov: number; ft: number; corpus: number; edges: number } {
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN);
  return {
    execs: number(/stat::number_of_executed_units:\s*(\d+)/),
    cov: number(/#\d+\s+DONE\s+cov: (\d+)/),
    ft: number(/#\d+\s+DONE\s+cov: \d+ ft: (\d+)/),
    corpus: number(/#\d+\s+DONE\s+cov: \d+ ft: \d+ corp: (\d+)/),
    edges: number(/Loaded \d+ modules\s+\((\d+) inline 8-bit counters\)/),
  };
}

it(`fuzzes the forwarder's parsers for ${SECONDS} s under ASan and UBSan: no finding`, { timeout: (SECONDS + 300) * 1000 }, () => {
  const fuzzer = join(work, "forwarder-fuzz");
  compileC({ source: join(FUZZ, "forwarder-fuzz.c"), output: fuzzer, fuzzer: true });
  const corpus = join(work, "corpus");
  mkdirSync(corpus);
  cpSync(join(FUZZ, "corpus"), corpus, { recursive: true });
  const r = spawnSync(
    fuzzer,
    [
      `-max_total_time=${SECONDS}`,
      "-print_final_stats=1",
      "-timeout=10",
      "-rss_limit_mb=2048",
      "-max_len=65536",
      `-artifact_prefix=${work}/`,
      corpus,
    ],
    { cwd: work, encoding: "utf8", maxBuffer: 64 << 20 },
  );
  const output = `${r.stdout}${r.stderr}`;
  const findings = readdirSync(work).filter((name) => /^(crash|leak|timeout|oom|slow-unit)-/.test(name));
  expect({ status: r.status, signal: r.signal, findings }, output.slice(-4000)).toEqual({ status: 0, signal: null, findings: [] });
  const s = stats(output);
  expect(s.execs).toBeGreaterThan(1000);
  expect(s.cov).toBeGreaterThan(0);

  // line coverage of the readers over the corpus the run ended with
  const covered = join(work, "forwarder-fuzz-cov");
  compileC({ source: join(FUZZ, "forwarder-fuzz.c"), output: covered, fuzzer: true, coverage: true });
  const raw = join(work, "fuzz.profraw");
  const replay = spawnSync(covered, ["-runs=0", corpus], { cwd: work, env: { ...process.env, LLVM_PROFILE_FILE: raw }, encoding: "utf8" });
  expect(replay.status, replay.stderr.slice(-2000)).toBe(0);
  const data = join(work, "fuzz.profdata");
  const merged = spawnSync("llvm-profdata", ["merge", "-sparse", raw, "-o", data], { encoding: "utf8" });
  if (merged.error !== undefined) throw new Error("llvm-profdata is missing: apt-get install llvm (npm test installs it)");
  expect(merged.status, merged.stderr).toBe(0);
  const headers = ["forwarder-json.h", "forwarder-route.h", "forwarder-answer.h"].map((h) => join(SRC, h));
  const report = spawnSync("llvm-cov", ["report", covered, `-instr-profile=${data}`, ...headers], { encoding: "utf8" });
  expect(report.status, report.stderr).toBe(0);
  // TOTAL <regions> <missed> <cover%> <functions> <missed> <exec%> <lines> <missed> <cover%> …
  const total =
    report.stdout
      .split("\n")
      .find((line) => line.startsWith("TOTAL"))
      ?.trim()
      .split(/\s+/) ?? [];
  const lines = total[9] ?? "?";
  console.log(
    `fuzz (native parsers): ${s.execs} executions in ${SECONDS} s, ${s.cov} of ${s.edges} edges (${((100 * s.cov) / s.edges).toFixed(1)} %), ${s.ft} features, corpus ${s.corpus}; line coverage of ${headers.length} headers over the corpus: ${lines} (regions ${total[3] ?? "?"})`,
  );
  expect(Number.parseFloat(lines)).toBeGreaterThan(50);
});
