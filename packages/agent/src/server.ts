import { unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { createConfigCache, hostConfigFs } from "@ipamkit/cni";
import pino, { type Logger } from "pino";
import { type Agent, type AgentOptions, type AgentStats, newStats } from "./agent-types.js";
import { type Connections, serveConnection } from "./connection.js";
import { within } from "./deadline.js";
import { KeyedQueue } from "./pool-queue.js";
import { prepareSocketPath, restrictSocket } from "./socket-file.js";
import { StoreCache } from "./store-cache.js";

export type { Agent, AgentOptions, AgentStats } from "./agent-types.js";

// The agent: a Unix socket server (here), its connections (connection.ts) and the CNI calls they
// carry (call.ts). It serves every call it is sent: the route was decided by the binary.

/** Listens on `socketPath` with mode 0600 from the start (umask), then restricted explicitly. */
async function listen(server: Server, socketPath: string): Promise<void> {
  await prepareSocketPath(socketPath);
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  restrictSocket(socketPath);
}

/** Stops accepting, lets the calls in flight finish (drainTimeoutMs at most), closes the stores and removes the socket. */
async function stop(ctx: Connections & { closing: boolean }, server: Server, logger: Logger): Promise<void> {
  const { options } = ctx;
  ctx.closing = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const socket of ctx.all) if (!ctx.working.has(socket)) socket.destroy();
  const drained = await within(Promise.allSettled([...ctx.inFlight]), options.drainTimeoutMs ?? 10_000);
  if (!drained) logger.warn({ inFlight: ctx.inFlight.size }, "calls still in flight after the drain timeout: stopping anyway");
  // answers written: give them a moment to leave, then close whatever is left
  await within(closed, 1_000);
  for (const socket of ctx.all) socket.destroy();
  await within(ctx.stores.closeAll(), 5_000);
  try {
    unlinkSync(options.socketPath);
  } catch {
    // already gone
  }
  logger.info({ socket: options.socketPath, requests: ctx.stats.requests, conflicts: ctx.stores.conflicts }, "ipamkit agent stopped");
}

/** Starts the node-local agent on a Unix socket (mode 0600; a stale socket file is replaced). */
export async function startAgent(options: AgentOptions): Promise<Agent> {
  const logger = options.logger ?? pino({ level: "silent" });
  const stores = new StoreCache(options.openStore);
  // a config is prepared once per stdin and flat-file state, not once per call (config-cache.ts in @ipamkit/cni)
  const configCache = createConfigCache();
  const stats = newStats();
  const snapshot = (): AgentStats => ({
    ...stats,
    byExitCode: { ...stats.byExitCode },
    stores: stores.size,
    conflicts: stores.conflicts,
    configs: { cached: configCache.hits, prepared: configCache.misses },
  });
  const ctx: Connections & { closing: boolean } = {
    options,
    logger,
    // the node's flat file from this process's environment (the chart's), never from a request
    fs: options.fs ?? hostConfigFs({ env: process.env, euid: process.geteuid?.() ?? 0 }),
    queue: new KeyedQueue(),
    stores,
    configCache,
    stats,
    snapshot,
    closing: false,
    all: new Set<Socket>(),
    working: new Set<Socket>(),
    inFlight: new Set<Promise<void>>(),
  };
  // the client half-closes after its request; the answer still goes back on the same connection
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => serveConnection(ctx, socket));
  await listen(server, options.socketPath);
  // pino's own base fields carry the pid: a second "pid" here made each line a JSON object with a key twice
  logger.info({ socket: options.socketPath }, "ipamkit agent listening");
  return { socketPath: options.socketPath, stats: snapshot, close: () => stop(ctx, server, logger) };
}
