import { parseArgs } from "node:util";
import { type Agent, startAgent } from "@ipamkit/agent";
import type { MetricsServer } from "@ipamkit/agent/metrics";
import { NODE_NAME } from "@ipamkit/cni";
import pino from "pino";
import { DATASTORES, type Datastore, loadStoreCode, openExclusive, openStore, readNodeSlice } from "./open-store.js";

// dist/ipamkit-agent: the node-local agent. It answers the CNI calls that `ipamkit` forwards over
// a Unix socket, with the same code and the same store loading as the binary (open-store.ts), but
// keeps each store's client open between calls.
const USAGE =
  "usage: ipamkit-agent --socket PATH [--node-name NAME] [--log-level info] [--warm etcd,kubernetes,file]\n" +
  "                     [--idle-timeout SECONDS (10)] [--drain-timeout SECONDS (10)] [--journal-interval SECONDS (10)]\n" +
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

type Flags = {
  socket?: string[];
  "node-name"?: string[];
  "log-level"?: string;
  warm?: string;
  "idle-timeout"?: string;
  "drain-timeout"?: string;
  "journal-interval"?: string;
  "metrics-address"?: string;
  help?: boolean;
};

type Timeouts = { idleTimeoutMs?: number; drainTimeoutMs?: number; journalIntervalMs?: number };
type MetricsCode = typeof import("@ipamkit/agent/metrics");

/** Everything the flags decide, checked; a number is the exit code to return (help printed, or a usage error written). */
type AgentSetup = {
  socket: string;
  nodeName: string | undefined;
  timeouts: Timeouts;
  warm: Datastore[];
  logger: pino.Logger;
  metricsAddress: string | undefined;
  metricsCode: MetricsCode | undefined;
};

/** Writes a usage error and gives the usage exit code. */
function usageError(message: string): number {
  process.stderr.write(`error: ${message}\n${USAGE}\n`);
  return 2;
}

/** The command line, parsed; a number is the exit code (help, or a flag parseArgs refused). */
function readFlags(): Flags | number {
  let values: Flags;
  try {
    ({ values } = parseArgs({
      options: {
        socket: { type: "string", multiple: true },
        "node-name": { type: "string", multiple: true },
        "log-level": { type: "string" },
        warm: { type: "string" },
        "idle-timeout": { type: "string" },
        "drain-timeout": { type: "string" },
        "journal-interval": { type: "string" },
        "metrics-address": { type: "string" },
        help: { type: "boolean" },
      },
      strict: true,
    }));
  } catch (error) {
    return usageError((error as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  return values;
}

/** --idle-timeout, --drain-timeout and --journal-interval in milliseconds; a number is the exit code of a usage error. */
function readTimeouts(values: Flags): Timeouts | number {
  const timeouts: Timeouts = {};
  for (const [flag, key] of [
    ["idle-timeout", "idleTimeoutMs"],
    ["drain-timeout", "drainTimeoutMs"],
    ["journal-interval", "journalIntervalMs"],
  ] as const) {
    const text = values[flag];
    if (text === undefined) continue;
    const seconds = Number(text);
    if (!(text.trim() !== "" && Number.isFinite(seconds) && seconds > 0)) {
      return usageError(`--${flag}: not a positive number of seconds: ${JSON.stringify(text)}`);
    }
    timeouts[key] = seconds * 1000;
  }
  return timeouts;
}

/** The checked flags, in the order they were always checked (the first bad one is the one reported). */
async function readSetup(): Promise<AgentSetup | number> {
  const values = readFlags();
  if (typeof values === "number") return values;
  const hosted = hostedAgent(values.socket ?? [], values["node-name"] ?? []);
  if (typeof hosted === "string") return usageError(hosted);
  const timeouts = readTimeouts(values);
  if (typeof timeouts === "number") return timeouts;
  const warm = (values.warm ?? "").split(",").filter((name) => name !== "");
  const unknown = warm.find((name) => !(DATASTORES as readonly string[]).includes(name));
  if (unknown !== undefined) {
    return usageError(`--warm: not a datastore: ${JSON.stringify(unknown)} (one of ${DATASTORES.join(", ")})`);
  }
  let logger: pino.Logger;
  try {
    logger = pino({ level: values["log-level"] ?? "info" });
  } catch {
    return usageError(`--log-level: unknown level ${JSON.stringify(values["log-level"])}`);
  }
  const metricsAddress = values["metrics-address"];
  // off unless asked for: prom-client is not even loaded then (agent start time)
  const metricsCode = metricsAddress === undefined ? undefined : await import("@ipamkit/agent/metrics");
  if (metricsCode !== undefined && metricsAddress !== undefined) {
    try {
      metricsCode.parseListenAddress(metricsAddress);
    } catch (error) {
      return usageError(`--metrics-address: ${(error as Error).message}`);
    }
  }
  const { socket, nodeName } = hosted;
  return { socket, nodeName, timeouts, warm: warm as Datastore[], logger, metricsAddress, metricsCode };
}

/** The running agent and its metrics server; `state.stopping` turns /healthz unhealthy. A number is the exit code. */
async function startServing(
  setup: AgentSetup,
  state: { stopping: boolean },
): Promise<{ agent: Agent; metricsServer: MetricsServer | undefined } | number> {
  const { socket, nodeName, logger, metricsAddress, metricsCode } = setup;
  const { journalIntervalMs, ...timeouts } = setup.timeouts;
  const metrics = metricsCode?.createAgentMetrics();
  const wired =
    metrics === undefined
      ? { openStore, openExclusive, readNodeSlice }
      : {
          openStore: async (config: Parameters<typeof openStore>[0]) => metrics.countStore(await openStore(config)),
          openExclusive,
          readNodeSlice,
          onCall: metrics.onCall,
        };
  let agent: Agent;
  let metricsServer: MetricsServer | undefined;
  try {
    agent = await startAgent({
      socketPath: socket,
      ...wired,
      logger,
      ...timeouts,
      // the node's DEL journal (its flat file's agent_journal_dir), replayed at start and every interval
      journal: journalIntervalMs === undefined ? {} : { scanIntervalMs: journalIntervalMs },
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
        healthy: () => !state.stopping,
      });
      logger.info({ url: metricsServer.url }, "metrics listening");
    } catch (error) {
      process.stderr.write(`ipamkit-agent: cannot serve metrics on ${metricsAddress}: ${(error as Error).message}\n`);
      await agent.close();
      return 1;
    }
  }
  return { agent, metricsServer };
}

/** Resolves on the first SIGTERM or SIGINT (logged). */
function untilStopSignal(logger: pino.Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        logger.info({ signal }, "stopping");
        resolve();
      });
    }
  });
}

async function main(): Promise<number> {
  const setup = await readSetup();
  if (typeof setup === "number") return setup;
  const state = { stopping: false };
  const serving = await startServing(setup, state);
  if (typeof serving === "number") return serving;
  // after listening: a call that arrives meanwhile is answered (it waits for the same code at most)
  void warmStores(setup.warm, setup.logger);
  await untilStopSignal(setup.logger);
  state.stopping = true;
  await serving.agent.close();
  await serving.metricsServer?.close();
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
