import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CNI_CODES, CniError, errorAnswer, hostConfigFs } from "@ipamkit/cni";

// dist/ipamkit-node: direct mode, the only TypeScript file that touches the real process
// (environment, streams, exit code), and deliberately small. The native binary (src/forwarder.c)
// decides where a call goes and runs this file only for the calls no agent answers: it loads the
// whole plugin, dist/ipamkit-direct.cjs, and runs the call here. It does not look at agent_socket.

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

async function main(): Promise<number> {
  // the node's flat file (IPAMKIT_CONFIGURATION_PATH of the runtime's environment, else the defaults)
  const fs = hostConfigFs({ env: process.env, euid: process.geteuid?.() ?? 0 });
  let stdin: Promise<string> | undefined;
  const read = () => {
    stdin ??= readAll();
    return stdin;
  };
  const path = join(__dirname, "ipamkit-direct.cjs");
  let direct: typeof import("./direct.js");
  try {
    direct = require(path) as typeof import("./direct.js");
  } catch (error) {
    const reason = (error as Error).message.split("\n")[0];
    const failure = new CniError(CNI_CODES.UNSUPPORTED_FIELD, `the plugin (${path}) cannot be loaded beside this binary: ${reason}`);
    process.stdout.write(errorAnswer(failure, await read().catch(() => "")));
    return 1;
  }
  return direct.runDirect(read, fs);
}

void main().then((code) => {
  process.exitCode = code;
});
