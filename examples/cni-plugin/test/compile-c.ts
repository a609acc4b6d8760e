import { spawnSync } from "node:child_process";
import { join } from "node:path";

/** The plugin's source directory (src/forwarder-generated.h is written there by `node build.mjs`, which the global setup runs). */
export const SRC = join(import.meta.dirname, "..", "src");

/**
 * Compiles a C test program of the forwarder's readers with clang (Debian's `clang`, and
 * `libclang-rt-14-dev` for the sanitizers and libFuzzer), AddressSanitizer and UBSan, every
 * sanitizer error fatal. `fuzzer`: linked with libFuzzer's driver. A missing compiler fails with
 * the command that installs it.
 */
export function compileC(options: { source: string; output: string; fuzzer?: boolean; coverage?: boolean }): void {
  const sanitizers = options.fuzzer === true ? "fuzzer,address,undefined" : "address,undefined";
  const args = [
    "-g",
    "-O1",
    "-Wall",
    "-Wextra",
    "-Werror",
    // the headers' file-reading functions are the binary's, not every test program's
    "-Wno-unused-function",
    `-fsanitize=${sanitizers}`,
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    ...(options.coverage === true ? ["-fprofile-instr-generate", "-fcoverage-mapping"] : []),
    "-o",
    options.output,
    options.source,
  ];
  const r = spawnSync("clang", args, { encoding: "utf8" });
  if (r.error !== undefined && (r.error as NodeJS.ErrnoException).code === "ENOENT") {
    throw new Error("clang is missing: apt-get install clang libclang-rt-14-dev (npm test installs them)");
  }
  if (r.status !== 0) throw new Error(`clang ${args.join(" ")} failed:\n${r.stderr}`);
}
