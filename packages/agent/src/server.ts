import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { hostname } from "node:os";
import { CNI_CODES, CniError, type ConfigFs, createConfigCache, dispatch, errorJson, type IpamConfig } from "@ipamkit/cni";
import type { Exclusive, IpamStore } from "@ipamkit/core";
import pino, { type Logger } from "pino";
import { exclusiveUntil, expiredAnswer, expiredError, lateAnswer, pastDeadline, UNDO_MARGIN_MS, within } from "./deadline.js";
import { KeyedQueue } from "./pool-queue.js";
import { type AgentRequest, type AgentResponse, MAX_REQUEST_BYTES, PROTOCOL_VERSION, rawFrame, requestProblem } from "./protocol.js";
import { prepareSocketPath, restrictSocket } from "./socket-file.js";
import { StoreCache } from "./store-cache.js";

export interface AgentOptions {
  socketPath: string;
  /** Opens the store a config selects; called once per store identity (see store-cache.ts). */
  openStore: (config: IpamConfig) => Promise<IpamStore>;
  /**
   * The lock an ADD holds when its config sets `whereabouts_lease` (the Kubernetes store's
   * `whereaboutsLease`), given up at `deadline` (epoch ms: the caller's, less the undo margin).
   */
  openExclusive?: (config: IpamConfig, identity: string, deadline?: number) => Exclusive;
  logger?: Logger;
  /** Flat-file access (default: this process's file system). */
  fs?: ConfigFs;
  /** This node's name for per-node blocks when a config sets no `node_name` (default: the host name). */
  nodeName?: string;
  /** A connection that has not sent its whole request after this long is closed (default 10 000 ms). */
  idleTimeoutMs?: number;
  /** close() waits this long at most for the calls in flight (default 10 000 ms). */
  drainTimeoutMs?: number;
  /** Told of every answered CNI call (metrics.ts's onCall). */
  onCall?: (call: { command: string; response: AgentResponse; seconds: number }) => void;
}

export interface AgentStats {
  requests: number;
  /** By exit code: 0 answered, 1 a CNI error. */
  byExitCode: Record<string, number>;
  malformed: number;
  /** Requests answered in the raw frame (the native forwarder). */
  raw: number;
  inFlight: number;
  stores: number;
  /** Store write conflicts (retried). One queue per pool: these come from other nodes. */
  conflicts: number;
  /** Calls whose config was answered from the agent's config cache / prepared afresh. */
  configs: { cached: number; prepared: number };
  /** Calls not performed because their caller's deadline had passed. */
  expired: number;
  /** ADDs that finished past their caller's deadline and were undone (released again). */
  undone: number;
  /** Connections closed for sending no whole request within the idle timeout. */
  idleClosed: number;
}

export interface Agent {
  readonly socketPath: string;
  stats(): AgentStats;
  /**
   * Stops accepting, closes idle connections, lets calls in flight finish (drainTimeoutMs at most),
   * closes the stores and removes the socket.
   */
  close(): Promise<void>;
}

const realFs: ConfigFs = { exists: existsSync, readText: (path) => readFileSync(path, "utf8") };

/** The pools a call touches: calls with the same key are queued one after another. */
function poolKey(config: IpamConfig): string {
  const cidrs = config.ranges.map((r) => r.range).sort();
  return `${config.datastore}|${config.networkName}|${cidrs.join(",")}`;
}

/** Starts the node-local agent on a Unix socket (mode 0600; a stale socket file is replaced). */
export async function startAgent(options: AgentOptions): Promise<Agent> {
  const logger = options.logger ?? pino({ level: "silent" });
  const { socketPath } = options;
  const queue = new KeyedQueue();
  const stores = new StoreCache(options.openStore);
  // a config is prepared once per stdin and flat-file state, not once per call (config-cache.ts in @ipamkit/cni)
  const configCache = createConfigCache();
  const fs = options.fs ?? realFs;
  const stats: AgentStats = {
    requests: 0,
    byExitCode: {},
    malformed: 0,
    raw: 0,
    inFlight: 0,
    stores: 0,
    conflicts: 0,
    configs: { cached: 0, prepared: 0 },
    expired: 0,
    undone: 0,
    idleClosed: 0,
  };
  const inFlight = new Set<Promise<void>>();
  const connections = new Set<Socket>();
  /** Connections whose call runs: close() waits for them; every other one is closed at once. */
  const working = new Set<Socket>();
  let closing = false;
  const snapshot = (): AgentStats => ({
    ...stats,
    byExitCode: { ...stats.byExitCode },
    stores: stores.size,
    conflicts: stores.conflicts,
    configs: { cached: configCache.hits, prepared: configCache.misses },
  });

  /** Runs one CNI call exactly as the binary would, with stores borrowed from the cache. */
  async function answer(env: Record<string, string>, stdin: string, callFs: ConfigFs, deadline?: number): Promise<AgentResponse> {
    let stdout = "";
    let stderr = "";
    const started = performance.now();
    const exitCode = await dispatch({
      env,
      stdin: async () => stdin,
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      fs: callFs,
      configCache,
      hostname: () => options.nodeName ?? hostname(),
      ...(options.openExclusive === undefined ? {} : { openExclusive: exclusiveUntil(options.openExclusive, deadline) }),
      openStore: async (config) => {
        const release = await queue.acquire(poolKey(config));
        // the last moment before any store work: a call whose caller gave up is not performed
        if (pastDeadline(deadline)) {
          release();
          stats.expired++;
          throw expiredError(deadline);
        }
        try {
          return await stores.borrow(config, release);
        } catch (error) {
          release();
          throw error;
        }
      },
    });
    if (exitCode === 0 && env.CNI_COMMAND === "ADD" && pastDeadline(deadline, UNDO_MARGIN_MS)) {
      // finished too late for the caller to hear it: the runtime was told it failed, so release it again
      const undo = await answer({ ...env, CNI_COMMAND: "DEL" }, stdin, callFs);
      stats.undone++;
      logger.warn(
        { containerId: env.CNI_CONTAINERID, ifName: env.CNI_IFNAME, undo: undo.exitCode },
        "ADD finished past its deadline: undone",
      );
      return lateAnswer(stdin, undo.exitCode === 0);
    }
    stats.byExitCode[exitCode] = (stats.byExitCode[exitCode] ?? 0) + 1;
    logger.debug(
      {
        command: env.CNI_COMMAND,
        containerId: env.CNI_CONTAINERID,
        ifName: env.CNI_IFNAME,
        exitCode,
        ms: Math.round(performance.now() - started),
      },
      "cni call",
    );
    return { v: PROTOCOL_VERSION, exitCode, stdout, stderr };
  }

  function malformed(reason: string): AgentResponse {
    stats.malformed++;
    logger.warn({ reason }, "malformed request");
    const error = new CniError(CNI_CODES.DECODE_FAILURE, `ipamkit agent: malformed request: ${reason}`);
    return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorJson(error, "1.1.0"), stderr: "" };
  }

  function serve(socket: Socket): void {
    let text = "";
    let done = false;
    let raw = false;
    socket.setEncoding("utf8");
    const send = (text: string) => {
      if (done) return;
      done = true;
      socket.end(text);
    };
    const respond = (response: AgentResponse) => send(raw ? rawFrame(response) : `${JSON.stringify(response)}\n`);
    const handle = async () => {
      let request: unknown;
      try {
        request = JSON.parse(text);
      } catch {
        return respond(malformed("not JSON"));
      }
      const problem = requestProblem(request);
      if (problem !== undefined) return respond(malformed(problem));
      if ((request as { op?: string }).op === "stats") {
        return respond({ v: PROTOCOL_VERSION, exitCode: 0, stdout: JSON.stringify(snapshot()), stderr: "" });
      }
      const { env, stdin, frame, deadline } = request as AgentRequest;
      // the binary decided that this call is the agent's (forwarder.c): it is served, not routed again
      if (frame === "raw") {
        raw = true;
        stats.raw++;
      }
      stats.requests++;
      const started = performance.now();
      const told = (response: AgentResponse) => {
        options.onCall?.({ command: env.CNI_COMMAND ?? "", response, seconds: (performance.now() - started) / 1000 });
        return response;
      };
      if (pastDeadline(deadline)) {
        // read only now: the agent was stopped (SIGSTOP) or overloaded while the caller waited
        stats.expired++;
        logger.warn({ command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID }, "call past its deadline: not performed");
        return respond(told(expiredAnswer(stdin, deadline)));
      }
      stats.inFlight++;
      try {
        respond(told(await answer(env, stdin, fs, deadline)));
      } catch (error) {
        // dispatch answers every error itself; this is a bug, reported as one
        logger.error({ err: error }, "unexpected failure");
        respond({
          v: PROTOCOL_VERSION,
          exitCode: 1,
          stdout: errorJson(new CniError(CNI_CODES.INTERNAL, "ipamkit agent: internal error"), "1.1.0"),
          stderr: "",
        });
      } finally {
        stats.inFlight--;
      }
    };
    const start = () => {
      if (done) return;
      socket.setTimeout(0);
      working.add(socket);
      const task = handle();
      inFlight.add(task);
      void task.finally(() => {
        inFlight.delete(task);
        working.delete(socket);
      });
    };
    if (closing) return void socket.destroy();
    connections.add(socket);
    socket.on("close", () => connections.delete(socket));
    // a client that connects and sends nothing (or not all) must not hold a connection forever
    socket.setTimeout(options.idleTimeoutMs ?? 10_000, () => {
      if (working.has(socket) || done) return;
      stats.idleClosed++;
      logger.debug("idle connection closed");
      socket.destroy();
    });
    socket.on("data", (chunk: string) => {
      if (done) return;
      text += chunk;
      if (text.length > MAX_REQUEST_BYTES) respond(malformed(`larger than ${MAX_REQUEST_BYTES} bytes`));
      else if (text.endsWith("\n")) start();
    });
    socket.on("end", () => {
      if (!text.endsWith("\n")) start();
    });
    socket.on("error", (error) => logger.debug({ err: error }, "client connection error"));
  }

  await prepareSocketPath(socketPath);
  // the client half-closes after its request; the answer still goes back on the same connection
  const server: Server = createServer({ allowHalfOpen: true }, serve);
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
  // pino's own base fields carry the pid: a second "pid" here made each line a JSON object with a key twice
  logger.info({ socket: socketPath }, "ipamkit agent listening");

  return {
    socketPath,
    stats: snapshot,
    async close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of connections) if (!working.has(socket)) socket.destroy();
      const drained = await within(Promise.allSettled([...inFlight]), options.drainTimeoutMs ?? 10_000);
      if (!drained) logger.warn({ inFlight: inFlight.size }, "calls still in flight after the drain timeout: stopping anyway");
      // answers written: give them a moment to leave, then close whatever is left
      await within(closed, 1_000);
      for (const socket of connections) socket.destroy();
      await within(stores.closeAll(), 5_000);
      try {
        unlinkSync(socketPath);
      } catch {
        // already gone
      }
      logger.info({ socket: socketPath, requests: stats.requests, conflicts: stores.conflicts }, "ipamkit agent stopped");
    },
  };
}
