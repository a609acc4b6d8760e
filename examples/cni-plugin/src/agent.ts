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
  "                     [--metrics-address HOST:PORT (off; serves /metrics and /healthz)]\n" +
  "       (a scale simulation may host several nodes: --socket PATH --node-name NAME, repeated, one name per socket)";

/** Each agent this process runs: its socket and its node's name (undefined: the host name). */
interface Hosted {
  socket: string;
  nodeName: string | undefined;
}

/**
 * The agents to run: one per --socket. Several sockets host several simulated nodes in one process
 * (the cluster simulation's hollow nodes): each then needs its own distinct --node-name, since every
 * agent is its node's only writer (store-cache.ts) and two agents under one name would each
 * remember for the same node.
 */
function hostedAgents(sockets: string[], names: string[]): Hosted[] | string {
  if (sockets.length === 0) return "--socket is required";
  const relative = sockets.find((socket) => !socket.startsWith("/"));
  if (relative !== undefined) return `--socket must be an absolute path: ${JSON.stringify(relative)}`;
  const badName = names.find((name) => !NODE_NAME.test(name));
  if (badName !== undefined) return `--node-name: not a node name: ${JSON.stringify(badName)}`;
  // one socket and no name: the node is the host (the DaemonSet passes the node's name)
  if (sockets.length === 1 && names.length === 0) return [{ socket: sockets[0] as string, nodeName: undefined }];
  if (names.length !== sockets.length)
    return `${sockets.length} sockets and ${names.length} node names: several sockets need one --node-name each`;
  if (new Set(sockets).size !== sockets.length) return "a --socket is given twice";
  if (new Set(names).size !== names.length) return "a --node-name is given twice: each hosted node is its own node";
  return sockets.map((socket, i) => ({ socket, nodeName: names[i] }));
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
  const hosted = hostedAgents(values.socket ?? [], values["node-name"] ?? []);
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
  const agents: Agent[] = [];
  let metricsServer: MetricsServer | undefined;
  let stopping = false;
  for (const { socket, nodeName } of hosted) {
    // several hosted nodes: every line says whose agent logged it
    const log = hosted.length > 1 ? logger.child({ node: nodeName }) : logger;
    try {
      const agent = await startAgent({
        socketPath: socket,
        ...wired,
        logger: log,
        ...timeouts,
        ...(nodeName === undefined ? {} : { nodeName }),
      });
      agents.push(agent);
      metrics?.watch(agent.stats);
    } catch (error) {
      log.fatal(`cannot start: ${(error as Error).message}`);
      // one plain line too, for whoever reads the container's stderr
      process.stderr.write(`ipamkit-agent: cannot start: ${(error as Error).message}\n`);
      await Promise.all(agents.map((agent) => agent.close()));
      return 1;
    }
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
      await Promise.all(agents.map((agent) => agent.close()));
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
  await Promise.all(agents.map((agent) => agent.close()));
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
