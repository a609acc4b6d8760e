import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

export const MAIN = join(import.meta.dirname, "..", "dist", "main.js");

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout as pino JSON lines. */
  lines: Record<string, unknown>[];
}

const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Runs the built program to completion. */
export function runMain(args: string[], timeoutMs = 30_000): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`main.js ${args.join(" ")} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, lines: jsonLines(stdout) });
    });
  });
}

/** Starts the program in the background; `lines()` reads what it logged so far. */
export function startMain(args: string[]): { child: ChildProcess; lines(): Record<string, unknown>[]; stop(): Promise<number | null> } {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "" } });
  let stdout = "";
  child.stdout?.on("data", (d) => (stdout += d));
  child.stderr?.on("data", (d) => (stdout += d));
  return {
    child,
    lines: () => jsonLines(stdout),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once("close", (code) => resolve(code));
        child.kill("SIGTERM");
      }),
  };
}
