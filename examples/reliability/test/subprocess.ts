import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
// the node a campaign runs on (its flat file: node-level keys), shared with the plugin's own tests
import { nodeEnv } from "../../cni-plugin/test/node-files.js";
import { AGENT, PLUGIN } from "./campaign.js";
import type { Outcome } from "./oracle.js";

export interface ProcessRun extends Outcome {
  stdoutBytes: Buffer;
}

/**
 * Runs the built plugin as a runtime would: CNI_* environment, config bytes on stdin, killed after
 * `boundMs` (a hang). `rawEnv` sets variables to raw bytes (not UTF-8), through a shell's printf:
 * Node itself can only pass UTF-8 text.
 */
export function runBinary(
  env: Record<string, string>,
  stdin: Buffer,
  options: { boundMs: number; rawEnv?: Record<string, Buffer>; binary?: string },
): Promise<ProcessRun> {
  const binary = options.binary ?? PLUGIN;
  const raw = Object.entries(options.rawEnv ?? {});
  const [cmd, args] =
    raw.length === 0
      ? [binary, []]
      : [
          "/bin/bash",
          [
            "-c",
            `${raw.map(([name, bytes]) => `export ${name}="$(printf '${[...bytes].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("")}')"`).join("; ")}; exec "$0"`,
            binary,
          ],
        ];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...nodeEnv(), ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.boundMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolve({
        exitCode: code,
        signal,
        stdout: stdoutBytes.toString("utf8"),
        stdoutBytes,
        stderr: Buffer.concat(err).toString("utf8"),
        ms: performance.now() - started,
      });
    });
    // the plugin may answer (and close stdin) before reading everything: that is allowed
    child.stdin.on("error", () => undefined);
    child.stdin.end(stdin);
  });
}

export interface AgentProcess {
  socketPath: string;
  child: ChildProcess;
  /** What it logged so far (pino JSON lines). */
  log(): string;
  stop(): Promise<void>;
}

/** Starts the built node-local agent on a fresh socket (debug logging) and waits until it listens. */
export async function startAgent(args: string[] = [], env: Record<string, string> = {}): Promise<AgentProcess> {
  const socketPath = join(mkdtempSync(join(tmpdir(), "ipamkit-rel-agent-")), "agent.sock");
  const child = spawn(AGENT, ["--socket", socketPath, "--log-level", "debug", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...nodeEnv(), ...env },
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const deadline = Date.now() + 20_000;
  while (!output.includes("ipamkit agent listening")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the agent did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  // "close", not "exit": the log read after stop() is whole (stdout and stderr may still be draining at "exit")
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    socketPath,
    child,
    log: () => output,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
      rmSync(dirname(socketPath), { recursive: true, force: true });
    },
  };
}

/** Runs `tasks` with at most `width` at once. */
export async function pool<T>(width: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await (tasks[i] as () => Promise<T>)();
      }
    }),
  );
  return results;
}
