import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentUnavailableError, forwardToAgent } from "@ipamkit/agent/client";
import { agentSettings, memoizedFs } from "@ipamkit/cni/agent-settings";

// dist/ipamkit: the only file that touches the real process (environment, streams, exit code), and
// deliberately small. With `agent_socket` configured it forwards the call to the node-local agent
// and loads nothing else; otherwise (or when the agent cannot answer) it loads the whole plugin,
// dist/ipamkit-direct.cjs, and runs the call here.

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

async function main(): Promise<number> {
  const fs = memoizedFs({ exists: existsSync, readText: (path) => readFileSync(path, "utf8") });
  let stdin: Promise<string> | undefined;
  const read = () => {
    stdin ??= readAll();
    return stdin;
  };
  const command = process.env.CNI_COMMAND;
  if (command !== undefined && command !== "VERSION") {
    const text = await read().catch(() => "");
    const settings = agentSettings(text, fs);
    if (settings !== undefined) {
      try {
        const answer = await forwardToAgent({ socketPath: settings.socket, env: process.env, stdin: text });
        process.stdout.write(answer.stdout);
        if (answer.stderr !== "") process.stderr.write(answer.stderr);
        return answer.exitCode;
      } catch (error) {
        if (!(error instanceof AgentUnavailableError)) throw error;
        if (settings.required) {
          process.stdout.write(cniError(text, 11, `${error.message} (agent_required)`));
          return 1;
        }
        process.stderr.write(`ipamkit: ${error.message}; running the call directly\n`);
      }
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
