import { existsSync, readFileSync } from "node:fs";
import { AgentUnavailableError, forwardToAgent } from "@ipamkit/agent/client";
import { agentSettings, CNI_CODES, CniError, type ConfigFs, dispatch, errorJson } from "@ipamkit/cni";
import { openStore } from "./open-store.js";

// The only file that touches the real process: environment, streams and the exit code.
function readStdin(): Promise<string> {
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

const fs: ConfigFs = { exists: existsSync, readText: (path) => readFileSync(path, "utf8") };

/**
 * With `agent_socket` configured, the call goes to the node-local agent (no store client is loaded
 * here); when the agent cannot answer, the call runs here instead, or — with `agent_required` —
 * fails with code 11 so that the runtime retries. Returns undefined when the call runs here.
 */
async function viaAgent(stdin: string): Promise<number | undefined> {
  const command = process.env.CNI_COMMAND;
  if (command === undefined || command === "VERSION") return undefined;
  const settings = agentSettings(stdin, fs);
  if (settings === undefined) return undefined;
  try {
    const answer = await forwardToAgent({ socketPath: settings.socket, env: process.env, stdin });
    process.stdout.write(answer.stdout);
    if (answer.stderr !== "") process.stderr.write(answer.stderr);
    return answer.exitCode;
  } catch (error) {
    if (!(error instanceof AgentUnavailableError)) throw error;
    if (!settings.required) {
      process.stderr.write(`ipamkit: ${error.message}; running the call directly\n`);
      return undefined;
    }
    const version = (() => {
      try {
        return String((JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion ?? "1.1.0");
      } catch {
        return "1.1.0";
      }
    })();
    process.stdout.write(errorJson(new CniError(CNI_CODES.TRY_AGAIN_LATER, `${error.message} (agent_required)`), version));
    return 1;
  }
}

async function main(): Promise<number> {
  let stdin: string | undefined;
  const read = async () => {
    stdin ??= await readStdin();
    return stdin;
  };
  if (process.env.CNI_COMMAND !== undefined && process.env.CNI_COMMAND !== "VERSION") {
    const forwarded = await viaAgent(await read().catch(() => ""));
    if (forwarded !== undefined) return forwarded;
  }
  return dispatch({
    env: process.env,
    stdin: read,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    fs,
    openStore,
  });
}

void main().then((code) => {
  process.exitCode = code;
});
