import { parseArgs } from "node:util";
import { type Agent, startAgent } from "@ipamkit/agent";
import type { MetricsServer } from "@ipamkit/agent/metrics";
import { NODE_NAME } from "@ipamkit/cni";
import pino from "pino";
import { DATASTORES, type Datastore, loadStoreCode, openExclusive, openStore } from "./open-store.js";

// dist/ipamkit-agent: the node-local agent. It answers the CNI calls that `ipamkit` forwards over
// a Unix socket, with the same code and the same store loading as the binary (open-store.ts), but
// keeps each store's client open between calls.
const USAGE =
  "usage: ipamkit-agent --socket PATH [--node-name NAME] [--log-level info] [--warm etcd,kubernetes,file]\n" +
  "                     [--idle-timeout SECONDS (10)] [--drain-timeout SECONDS (10)]\n" +
  "                     [--metrics-address HOST:PORT (off; serves /metrics and /healthz)]";

/**
 * The one node this agent serves: its socket and its node's name (undefined: the host name). One
 * agent per process (the cluster simulation hosts several nodes' agents itself, examples/cluster-sim).
 */
function hostedAgent(sockets: string[], names: string[]): { socket: string; nodeName: string | undefined } | string {
  const [socket, ...moreSockets] = sockets;
  if (socket === undefined) return "--socket is required";
  if (moreSockets.length > 0 || names.length > 1) return "--socket and --node-name are given once: one agent serves one node";
  if (!socket.startsWith("/")) return `--socket must be an absolute path: ${JSON.stringify(socket)}`;
  const [nodeName] = names;
  if (nodeName !== undefined && !NODE_NAME.test(nodeName)) return `--node-name: not a node name: ${JSON.stringify(nodeName)}`;
  return { socket, nodeName };
}

async function main(): Promise<number> {
  let values: {
    socket?: string[];
    "node-name"?: string[];
    "log-level"?: string;
    warm?: string;
    "idle-timeout"?: string;
    "drain-timeout"?: string;
    "metrics-address"?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      options: {
        socket: { type: "string", multiple: true },
        "node-name": { type: "string", multiple: true },
        "log-level": { type: "string" },
        warm: { type: "string" },
        "idle-timeout": { type: "string" },
        "drain-timeout": { type: "string" },
        "metrics-address": { type: "string" },
        help: { type: "boolean" },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const hosted = hostedAgent(values.socket ?? [], values["node-name"] ?? []);
  if (typeof hosted === "string") {
    process.stderr.write(`error: ${hosted}\n${USAGE}\n`);
    return 2;
  }
  const timeouts: { idleTimeoutMs?: number; drainTimeoutMs?: number } = {};
  for (const [flag, key] of [
    ["idle-timeout", "idleTimeoutMs"],
    ["drain-timeout", "drainTimeoutMs"],
  ] as const) {
    const text = values[flag];
    if (text === undefined) continue;
    const seconds = Number(text);
    if (!(text.trim() !== "" && Number.isFinite(seconds) && seconds > 0)) {
      process.stderr.write(`error: --${flag}: not a positive number of seconds: ${JSON.stringify(text)}\n${USAGE}\n`);
      return 2;
    }
    timeouts[key] = seconds * 1000;
  }
  const warm = (values.warm ?? "").split(",").filter((name) => name !== "");
  const unknown = warm.find((name) => !(DATASTORES as readonly string[]).includes(name));
  if (unknown !== undefined) {
    process.stderr.write(`error: --warm: not a datastore: ${JSON.stringify(unknown)} (one of ${DATASTORES.join(", ")})\n${USAGE}\n`);
    return 2;
  }
  let logger: pino.Logger;
  try {
    logger = pino({ level: values["log-level"] ?? "info" });
  } catch {
    process.stderr.write(`error: --log-level: unknown level ${JSON.stringify(values["log-level"])}\n${USAGE}\n`);
    return 2;
  }
  const metricsAddress = values["metrics-address"];
  // off unless asked for: prom-client is not even loaded then (agent start time)
  const metricsCode = metricsAddress === undefined ? undefined : await import("@ipamkit/agent/metrics");
  if (metricsCode !== undefined && metricsAddress !== undefined) {
    try {
      metricsCode.parseListenAddress(metricsAddress);
    } catch (error) {
      process.stderr.write(`error: --metrics-address: ${(error as Error).message}\n${USAGE}\n`);
      return 2;
    }
  }
  const metrics = metricsCode?.createAgentMetrics();
  const wired =
    metrics === undefined
      ? { openStore, openExclusive }
      : {
          openStore: async (config: Parameters<typeof openStore>[0]) => metrics.countStore(await openStore(config)),
          openExclusive,
          onCall: metrics.onCall,
        };
  let agent: Agent;
  let metricsServer: MetricsServer | undefined;
  let stopping = false;
  const { socket, nodeName } = hosted;
  try {
    agent = await startAgent({
      socketPath: socket,
      ...wired,
      logger,
      ...timeouts,
      ...(nodeName === undefined ? {} : { nodeName }),
    });
    metrics?.watch(agent.stats);
  } catch (error) {
    logger.fatal(`cannot start: ${(error as Error).message}`);
    // one plain line too, for whoever reads the container's stderr
    process.stderr.write(`ipamkit-agent: cannot start: ${(error as Error).message}\n`);
    return 1;
  }
  if (metricsCode !== undefined && metrics !== undefined && metricsAddress !== undefined) {
    try {
      metricsServer = await metricsCode.startMetricsServer({
        address: metricsAddress,
        registry: metrics.registry,
        healthy: () => !stopping,
      });
      logger.info({ url: metricsServer.url }, "metrics listening");
    } catch (error) {
      process.stderr.write(`ipamkit-agent: cannot serve metrics on ${metricsAddress}: ${(error as Error).message}\n`);
      await agent.close();
      return 1;
    }
  }
  // after listening: a call that arrives meanwhile is answered (it waits for the same code at most)
  void warmStores(warm as Datastore[], logger);
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        logger.info({ signal }, "stopping");
        resolve();
      });
    }
  });
  stopping = true;
  await agent.close();
  await metricsServer?.close();
  return 0;
}

/** Loads the named stores' code now rather than on the node's first call; a failure is only logged (a call reports it). */
async function warmStores(datastores: Datastore[], logger: pino.Logger): Promise<void> {
  for (const datastore of datastores) {
    const started = performance.now();
    try {
      await loadStoreCode(datastore);
      logger.info({ datastore, ms: Math.round(performance.now() - started) }, "store code loaded");
    } catch (error) {
      logger.warn({ datastore }, `--warm: cannot load the store code: ${(error as Error).message}`);
    }
  }
}

// exit even if a store client keeps a timer or a connection: close() has drained the calls
void main().then((code) => process.exit(code));
