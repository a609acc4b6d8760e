import { hostname } from "node:os";
import { type ConfigCache, type ConfigFs, dispatch, type IpamConfig } from "@ipamkit/cni";
import type { Logger } from "pino";
import type { AgentOptions, OwnStats } from "./agent-types.js";
import { exclusiveUntil, expiredError, lateAnswer, pastDeadline, UNDO_MARGIN_MS } from "./deadline.js";
import type { Journal } from "./journal.js";
import type { KeyedQueue } from "./pool-queue.js";
import { type AgentResponse, PROTOCOL_VERSION } from "./protocol.js";
import type { StoreCache } from "./store-cache.js";

/** What a CNI call in the agent runs with: shared by every call of one agent. */
export interface CallContext {
  options: AgentOptions;
  logger: Logger;
  fs: ConfigFs;
  queue: KeyedQueue;
  stores: StoreCache;
  configCache: ConfigCache;
  stats: OwnStats;
  /** The DEL journal, when the agent reads one (AgentOptions.journal). */
  journal?: Journal;
}

/** The pools a call touches: calls with the same key are queued one after another. */
function poolKey(config: IpamConfig): string {
  const cidrs = config.ranges.map((r) => r.range).sort();
  return `${config.datastore}|${config.networkName}|${cidrs.join(",")}`;
}

/** The store of a call: after its pool's queue, borrowed from the cache; never for a caller that gave up. */
async function openQueued(ctx: CallContext, config: IpamConfig, deadline: number | undefined) {
  const release = await ctx.queue.acquire(poolKey(config));
  // the last moment before any store work: a call whose caller gave up is not performed
  if (pastDeadline(deadline)) {
    release();
    ctx.stats.expired++;
    throw expiredError(deadline);
  }
  try {
    return await ctx.stores.borrow(config, release);
  } catch (error) {
    release();
    throw error;
  }
}

/** Runs one CNI call exactly as the binary would, with stores borrowed from the cache. */
export async function runCall(ctx: CallContext, env: Record<string, string>, stdin: string, deadline?: number): Promise<AgentResponse> {
  const { options, logger, stats } = ctx;
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
    fs: ctx.fs,
    configCache: ctx.configCache,
    hostname: () => options.nodeName ?? hostname(),
    ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
    ...(options.readNodeSlice === undefined ? {} : { readNodeSlice: options.readNodeSlice }),
    ...(options.openExclusive === undefined ? {} : { openExclusive: exclusiveUntil(options.openExclusive, deadline) }),
    openStore: (config) => openQueued(ctx, config, deadline),
    cache: (config) => ctx.stores.cacheOf(config),
  });
  if (exitCode === 0 && env.CNI_COMMAND === "ADD" && pastDeadline(deadline, UNDO_MARGIN_MS)) {
    // finished too late for the caller to hear it: the runtime was told it failed, so release it again
    const undo = await runCall(ctx, { ...env, CNI_COMMAND: "DEL" }, stdin);
    stats.undone++;
    logger.warn(
      { containerId: env.CNI_CONTAINERID, ifName: env.CNI_IFNAME, undo: undo.exitCode },
      "ADD finished past its deadline: undone",
    );
    return lateAnswer(stdin, undo.exitCode === 0);
  }
  stats.byExitCode[exitCode] = (stats.byExitCode[exitCode] ?? 0) + 1;
  const ms = Math.round(performance.now() - started);
  logger.debug({ command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID, ifName: env.CNI_IFNAME, exitCode, ms }, "cni call");
  return { v: PROTOCOL_VERSION, exitCode, stdout, stderr };
}
