import { parseArgs } from "node:util";
import { agentStats } from "@ipamkit/agent/client";

// ipamkit-probe: the agent container's readiness and liveness probe (an exec probe: kubelet cannot
// reach a Unix socket itself). It asks the agent for its counters over its socket — the agent's
// own accept loop and protocol answer it, no store is involved — and exits 0 when it answers, 1
// with one line naming the socket otherwise.
const USAGE = "usage: ipamkit-probe --socket PATH [--timeout-ms 3000]";

async function main(): Promise<number> {
  let values: { socket?: string; "timeout-ms"?: string };
  try {
    ({ values } = parseArgs({ options: { socket: { type: "string" }, "timeout-ms": { type: "string" } }, strict: true }));
  } catch (error) {
    process.stderr.write(`ipamkit-probe: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const timeoutMs = Number(values["timeout-ms"] ?? "3000");
  if (values.socket === undefined || !values.socket.startsWith("/") || !Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    process.stderr.write(`ipamkit-probe: --socket must be an absolute path and --timeout-ms a positive integer\n${USAGE}\n`);
    return 2;
  }
  try {
    const stats = await agentStats(values.socket, timeoutMs);
    process.stdout.write(`ipamkit agent at ${values.socket} answers (${Object.keys(stats).length} counters)\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`ipamkit-probe: ${(error as Error).message}\n`);
    return 1;
  }
}

void main().then((code) => {
  process.exitCode = code;
});
