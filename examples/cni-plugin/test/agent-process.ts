import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeEnv } from "./node-files.js";

export const AGENT = join(import.meta.dirname, "..", "dist", "ipamkit-agent");

export interface AgentProcess {
  socketPath: string;
  child: ChildProcess;
  /** What it logged so far (pino JSON lines). */
  log(): string;
  /** SIGTERM and wait (graceful). */
  stop(): Promise<number | null>;
  /** SIGKILL and wait (a crash: the socket file stays behind). */
  kill(): Promise<void>;
}

export interface AgentProcessOptions {
  /** More arguments (after --socket and --log-level debug). */
  args?: string[];
  /** Another copy of the agent (default: dist/ipamkit-agent). */
  binary?: string;
  /** More environment (IPAMKIT_CONFIGURATION_PATH: the node's flat file, as the chart sets it). */
  env?: Record<string, string>;
}

/** Starts the built agent on a fresh socket and waits until it listens. */
export async function startAgentProcess(
  socketPath = join(mkdtempSync(join(tmpdir(), "ipamkit-agentp-")), "agent.sock"),
  options: AgentProcessOptions = {},
): Promise<AgentProcess> {
  const child = spawn(options.binary ?? AGENT, ["--socket", socketPath, "--log-level", "debug", ...(options.args ?? [])], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...nodeEnv(), ...options.env },
  });
  let output = "";
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  const deadline = Date.now() + 10_000;
  while (!output.includes("ipamkit agent listening")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the agent did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  // "close", not "exit": the output read after it is whole (stdout and stderr may still be draining at "exit")
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const cleanup = () => {
    const parent = join(socketPath, "..");
    if (parent.includes("ipamkit-agentp-") && existsSync(parent)) rmSync(parent, { recursive: true, force: true });
  };
  return {
    socketPath,
    child,
    log: () => output,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const code = await exited;
      cleanup();
      return code;
    },
    async kill() {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
