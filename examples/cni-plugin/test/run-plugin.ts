import { spawn } from "node:child_process";
import { join } from "node:path";
import { nodeEnv } from "./node-files.js";

/** The binary a runtime executes (native; it hands non-agent calls to PLUGIN_NODE beside it). */
export const PLUGIN = join(import.meta.dirname, "..", "dist", "ipamkit");
/** The Node forwarder. */
export const PLUGIN_NODE = join(import.meta.dirname, "..", "dist", "ipamkit-node");

export interface PluginRun {
  code: number | null;
  /** The signal that ended it, if one did. */
  signal?: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  json: Record<string, unknown> | undefined;
}

export interface RunOptions {
  /** The working directory (default: this process's). */
  cwd?: string;
  /** SIGKILL after this many milliseconds (the run then has signal "SIGKILL"). */
  killAfterMs?: number;
}

/** Runs the built plugin as a runtime would: CNI_* environment (and the test's node: useNode()), config on stdin. */
export function runPlugin(
  env: Record<string, string>,
  stdin: string | Buffer | object,
  binary = PLUGIN,
  options: RunOptions = {},
): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...nodeEnv(), ...env },
      stdio: ["pipe", "pipe", "pipe"],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), options.killAfterMs);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += String(d);
    });
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      let json: Record<string, unknown> | undefined;
      try {
        json = stdout.trim() === "" ? undefined : (JSON.parse(stdout) as Record<string, unknown>);
      } catch {
        json = undefined;
      }
      resolve({ code, signal, stdout, stderr, json });
    });
    // A call the binary answers without reading stdin (VERSION) may exit before the write lands:
    // EPIPE then says nothing about the answer, which is judged from stdout and the exit code.
    child.stdin.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") reject(error);
    });
    child.stdin.end(typeof stdin === "string" || Buffer.isBuffer(stdin) ? stdin : JSON.stringify(stdin));
  });
}

export function cniEnv(command: string, containerId = "c1", ifName = "net1", extra: Record<string, string> = {}): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: containerId,
    CNI_IFNAME: ifName,
    CNI_NETNS: "/var/run/netns/test",
    CNI_PATH: "/usr/lib/cni",
    ...extra,
  };
}
