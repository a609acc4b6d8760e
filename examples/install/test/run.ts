import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `file` (node when it is a script) with exactly `env` (plus PATH), stdin from `input`. */
export function run(file: string, args: readonly string[], env: Record<string, string>, input = ""): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += String(d);
    });
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    // a program that answers without reading stdin may exit before the write lands (EPIPE)
    child.stdin.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") reject(error);
    });
    child.stdin.end(input);
  });
}

/** The installer as a long-running process (--watch); `output()` is what it logged so far. */
export function start(file: string, args: readonly string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(file, args, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += String(d);
  });
  child.stderr?.on("data", (d) => {
    output += String(d);
  });
  return { child, output: () => output };
}

/** Resolves with the exit code once `child` exits (at once when it already has). */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Polls `check` every 50 ms until it holds; throws `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const dirs: string[] = [];
/** A fresh temporary dir, removed by {@link removeTempDirs}. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
export function removeTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * A projected ServiceAccount volume as the kubelet lays it out: the files live in a timestamped
 * directory, `..data` links to it, and `token`, `ca.crt`, `namespace` link through `..data`. A
 * rotation writes a new directory and swaps `..data` with one rename — what `rotate` does.
 */
export function serviceAccountVolume(
  dir: string,
  files: { token: string; ca: string; namespace: string },
): { rotate: (token: string) => void } {
  mkdirSync(dir, { recursive: true });
  let generation = 0;
  const write = (token: string) => {
    generation += 1;
    const data = `..2026_12_07_00_00_0${generation}.${generation}`;
    mkdirSync(join(dir, data));
    writeFileSync(join(dir, data, "token"), token);
    writeFileSync(join(dir, data, "ca.crt"), files.ca);
    writeFileSync(join(dir, data, "namespace"), files.namespace);
    symlinkSync(data, join(dir, "..data_tmp"));
    renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
  };
  write(files.token);
  for (const name of ["token", "ca.crt", "namespace"]) symlinkSync(join("..data", name), join(dir, name));
  return { rotate: write };
}
