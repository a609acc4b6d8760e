import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentUnavailableError, forwardToAgent } from "@ipamkit/agent/client";
import { AGENT_TIMEOUT_DEFAULT_SECONDS, type AgentSettings, agentSettings, memoizedFs } from "@ipamkit/cni/agent-settings";

// dist/ipamkit-node: the Node forwarder, the only TypeScript file that touches the real process
// (environment, streams, exit code), and deliberately small. The native binary (src/forwarder.c)
// runs it for direct-mode calls only, with IPAMKIT_ROUTE=direct: it then loads the whole plugin,
// dist/ipamkit-direct.cjs, and runs the call here. Run alone (a build without a C compiler), it
// applies the same routing as the native binary first: forward to the agent when `agent_socket`
// is configured, with the same bound, checks and errors.

/**
 * All of stdin. Synchronously when possible: creating `process.stdin` sets up stream machinery
 * that costs ~5–8 ms of a ~40 ms start; a runtime's pipe can simply be read. A non-blocking stdin
 * (EAGAIN) falls back to the stream.
 */
async function readAll(): Promise<string> {
  try {
    return readFileSync(0, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
  }
  return new Promise((resolve, reject) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => {
      text += chunk;
    });
    process.stdin.on("end", () => resolve(text));
    process.stdin.on("error", reject);
  });
}

/** A CNI error in the config's version, without loading the plugin. */
function cniError(stdin: string, code: number, message: string): string {
  let cniVersion = "1.1.0";
  try {
    const v = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    if (typeof v === "string" && v !== "") cniVersion = v;
  } catch {
    // keep the default
  }
  return `${JSON.stringify({ cniVersion, code, msg: message })}\n`;
}

/**
 * The agent's answer, or the CNI error to print instead (the same texts as src/forwarder.c); undefined:
 * run the call directly. Only when this file runs alone (a build without a C compiler): the native
 * binary decides the route itself and hands over only direct-mode calls (IPAMKIT_ROUTE=direct).
 */
async function viaAgent(text: string, settings: AgentSettings): Promise<number | undefined> {
  const timeoutSeconds = settings.timeoutSeconds ?? AGENT_TIMEOUT_DEFAULT_SECONDS;
  try {
    const answer = await forwardToAgent({
      socketPath: settings.socket,
      env: process.env,
      stdin: text,
      timeoutMs: timeoutSeconds * 1000,
      allowedUids: settings.uid === undefined ? [0] : [0, settings.uid],
    });
    process.stdout.write(answer.stdout);
    if (answer.stderr !== "") process.stderr.write(answer.stderr);
    return answer.exitCode;
  } catch (error) {
    if (!(error instanceof AgentUnavailableError)) throw error;
    let message = error.message;
    if (error.kind === "timeout") {
      message += ` after ${timeoutSeconds} s (agent_timeout): the agent is hung or overloaded; it will not perform this call later`;
    } else if (error.kind === "unreachable" && settings.required) {
      message += ": the ipamkit agent (DaemonSet) is not running on this node (agent_required)";
    } else if (error.kind === "failed" && settings.required) {
      message += " (agent_required)";
    } else if (error.kind !== "refused") {
      process.stderr.write(`ipamkit: ${message}; running the call directly\n`);
      return undefined;
    }
    process.stdout.write(cniError(text, 11, message));
    return 1;
  }
}

async function main(): Promise<number> {
  const fs = memoizedFs({ exists: existsSync, readText: (path) => readFileSync(path, "utf8") });
  let stdin: Promise<string> | undefined;
  const read = () => {
    stdin ??= readAll();
    return stdin;
  };
  const command = process.env.CNI_COMMAND;
  const decided = process.env.IPAMKIT_ROUTE === "direct";
  if (command !== undefined && command !== "VERSION" && !decided) {
    const text = await read().catch(() => "");
    const settings = agentSettings(text, fs);
    if (settings !== undefined) {
      const code = await viaAgent(text, settings);
      if (code !== undefined) return code;
    }
  }
  const path = join(__dirname, "ipamkit-direct.cjs");
  let direct: typeof import("./direct.js");
  try {
    direct = require(path) as typeof import("./direct.js");
  } catch (error) {
    const reason = (error as Error).message.split("\n")[0];
    process.stdout.write(cniError(await read().catch(() => ""), 2, `the plugin (${path}) cannot be loaded beside this binary: ${reason}`));
    return 1;
  }
  return direct.runDirect(read, fs);
}

void main().then((code) => {
  process.exitCode = code;
});
