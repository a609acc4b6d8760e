import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface CompileOptions {
  /** The C file beside this one, e.g. "launcher.c". */
  source: string;
  /** What needs it, for the error without a C compiler, e.g. "the native spawner". */
  neededBy: string;
  /** What to do instead, appended to that error, e.g. "or run with --spawner node". */
  otherwise?: string;
}

/** A C program of src/ compiled with `cc` ($CC) into $TMPDIR/ipamkit-sim/, cached by its source's hash; a clear error without a C compiler. */
export function compiledC(options: CompileOptions): string {
  const path = join(import.meta.dirname, options.source);
  const source = readFileSync(path);
  const dir = join(tmpdir(), "ipamkit-sim");
  const name = options.source.replace(/\.c$/, "");
  const binary = join(dir, `${name}-${createHash("sha256").update(source).digest("hex").slice(0, 16)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}`;
  const cc = process.env.CC ?? "cc";
  const built = spawnSync(cc, ["-O2", "-Wall", "-Wextra", "-Werror", "-o", partial, path], { encoding: "utf8" });
  if (built.error !== undefined || built.status !== 0) {
    const otherwise = options.otherwise === undefined ? "" : ` (${options.otherwise})`;
    throw new Error(`${options.neededBy} needs a C compiler: ${cc} ${built.error?.message ?? built.stderr.trim()}${otherwise}`);
  }
  chmodSync(partial, 0o755);
  renameSync(partial, binary);
  return binary;
}
