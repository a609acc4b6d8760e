import { REPO_FILES, stale, write } from "./figures.js";

/**
 * pnpm bench:figures — README's headline table and BENCHMARKS.md's summary and simulation tables,
 * generated from the raw result files in bench/results/. `--check`: exit 1 when the files differ
 * from what the raw files give (what the test asserts).
 */
try {
  if (process.argv.includes("--check")) {
    const out = stale(REPO_FILES);
    for (const line of out) process.stderr.write(`bench-figures: stale: ${line}\n`);
    process.exitCode = out.length === 0 ? 0 : 1;
  } else {
    const changed = write(REPO_FILES);
    process.stdout.write(changed.length === 0 ? "bench-figures: nothing changed\n" : `bench-figures: wrote ${changed.join(", ")}\n`);
  }
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exitCode = 1;
}
