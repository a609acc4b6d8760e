import { attachmentKey, type Exclusive, type IpamCache, type IpamStore, type PoolRef, type Range } from "@ipamkit/core";
import { add, type CommandContext, check, del, gc, status } from "./commands.js";
import { type ConfigCache, prepareConfig } from "./config-cache.js";
import { checkEnv, parseCniArgs, readEnv } from "./env.js";
import { CNI_CODES, CniError, errorJson, toCniError } from "./errors.js";
import { type NodeSlice, type ReadNodeSlice, readSlice, sliceNodeName } from "./node-slice.js";
import { type CniCommand, type ConfigFs, type IpamConfig, SUPPORTED_VERSIONS } from "./types.js";
import { commandAllowed, versionResult } from "./versions.js";
import { processWarnings, type WarnOnce } from "./warn-once.js";

/** Everything the plugin touches, passed in: tests never touch process.env or the real streams. */
export interface DispatcherOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Reads all of stdin. */
  stdin: () => Promise<string>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** File access for the flat config file. */
  fs: ConfigFs;
  /** This host's name: the default node name for per-node blocks (`node_block_size`). */
  hostname?: () => string;
  /** Opens the store the config selects (the edge loads only that one backend). */
  openStore: (config: IpamConfig) => Promise<IpamStore>;
  /** What a long-lived process remembers of a config's store (the agent: claims and pools), given to the allocator. */
  cache?: (config: IpamConfig) => IpamCache | undefined;
  /**
   * The lock an ADD holds when the config sets `whereabouts_lease` (the Kubernetes store's
   * `whereaboutsLease`); `identity` names this call's holder (podNamespace/podName when known);
   * `pool`, on a network with node slices, is the node's slice pool (its Lease is named after it).
   */
  openExclusive?: (config: IpamConfig, identity: string, pool?: PoolRef) => Exclusive;
  /**
   * Reads a node's slice of a network with `node_slice_size` (the Kubernetes store's NodeSlicePool:
   * its `readNodeSlice`), given by the edge that opens the store; absent, such a network is code 2.
   */
  readNodeSlice?: ReadNodeSlice;
  /** This process's own name for its node (the agent's `--node-name`): node slices use it after the call's NODENAME. */
  nodeName?: string;
  /** Keeps prepared configs across calls (a long-lived process: the agent); default: each call prepares its own. */
  configCache?: ConfigCache;
  /** Which config warnings were printed already (once per network and process); default: this process's memory. */
  warnOnce?: WarnOnce;
}

/** What the plugin prints on stderr when run without CNI_COMMAND (as skel does); the native binary prints the same (generated). */
export const ABOUT_TEXT = `ipamkit CNI IPAM plugin\nCNI protocol versions supported: ${SUPPORTED_VERSIONS.join(", ")}\n`;

/** A Lease holder identity: unique per call (two interfaces of one pod ADD at once), readable by people. */
function holderOf(args: { podNamespace?: string; podName?: string }, containerId: string | undefined): string {
  const pod = args.podNamespace !== undefined && args.podName !== undefined ? `${args.podNamespace}/${args.podName}` : "cni";
  return `ipamkit/${pod}/${(containerId ?? "").slice(0, 12)}/${Math.random().toString(16).slice(2, 10)}`;
}

/** VERSION: the supported versions, in the config's cniVersion when stdin names one. */
async function answerVersion(options: DispatcherOptions): Promise<number> {
  let cniVersion: string = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.length - 1] as string;
  const input = await options.stdin().catch(() => "");
  try {
    const v = (JSON.parse(input) as { cniVersion?: unknown }).cniVersion;
    if (typeof v === "string" && v !== "") cniVersion = v;
  } catch {
    // VERSION ignores an unreadable stdin, like the reference skel
  }
  options.stdout(`${JSON.stringify(versionResult(cniVersion))}\n`);
  return 0;
}

async function runCommand(command: Exclude<CniCommand, "VERSION">, ctx: CommandContext, stdout: (text: string) => void): Promise<void> {
  switch (command) {
    case "ADD":
      stdout(`${JSON.stringify(await add(ctx))}\n`);
      break;
    case "DEL":
      await del(ctx);
      break;
    case "CHECK":
      await check(ctx);
      break;
    case "GC":
      await gc(ctx);
      break;
    case "STATUS":
      await status(ctx);
      break;
  }
}

/** The node's slice on a network with `node_slice_size` (undefined on any other). */
async function nodeSliceOf(options: DispatcherOptions, config: IpamConfig, ranges: readonly Range[]): Promise<NodeSlice | undefined> {
  const range = ranges[0];
  if (config.nodeSlices === undefined || range === undefined) return undefined;
  if (options.readNodeSlice === undefined) {
    throw new CniError(CNI_CODES.UNSUPPORTED_FIELD, "ipam.node_slice_size: this plugin build cannot read NodeSlicePools");
  }
  const node = sliceNodeName({ env: options.env, nodeName: options.nodeName, fs: options.fs, flatFile: config.flatFile });
  return readSlice(options.readNodeSlice, config, range, node);
}

/** Runs one CNI invocation; returns the exit code. Errors are CNI error JSON on stdout, exit 1. */
export async function dispatch(options: DispatcherOptions): Promise<number> {
  let cniVersion: string = SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.length - 1] as string;
  try {
    const env = readEnv(options.env);
    if (env.command === undefined) {
      options.stderr(ABOUT_TEXT);
      return 0;
    }
    if (env.command === "VERSION") return await answerVersion(options);
    checkEnv(options.env, env.command);
    const command = env.command;
    let stdin: string;
    try {
      stdin = await options.stdin();
    } catch (error) {
      throw new CniError(CNI_CODES.IO_FAILURE, `reading stdin: ${(error as Error).message}`);
    }
    const { config, ranges } = (options.configCache ?? { prepare: prepareConfig }).prepare(stdin, { fs: options.fs, command });
    cniVersion = config.cniVersion;
    if (!commandAllowed(command, config.cniVersion)) {
      throw new CniError(CNI_CODES.INCOMPATIBLE_VERSION, `${command} is not supported for cniVersion ${config.cniVersion}`);
    }
    const network = `${config.name}/${config.networkName}`;
    for (const warning of (options.warnOnce ?? processWarnings).fresh(network, config.warnings)) {
      options.stderr(`ipamkit: warning: ${warning}\n`);
    }
    const node = config.nodeBlocks === undefined ? undefined : (config.nodeBlocks.node ?? options.hostname?.());
    const args = parseCniArgs(options.env.CNI_ARGS);
    const store = await options.openStore(config);
    const cache = options.cache?.(config);
    try {
      const slice = command === "GC" ? undefined : await nodeSliceOf(options, config, ranges);
      const slicePool: PoolRef | undefined =
        slice?.slice === undefined ? undefined : { network: config.networkName, cidr: slice.slice, node: slice.node };
      const ctx: CommandContext = {
        config,
        ranges,
        store,
        ...(cache === undefined ? {} : { cache }),
        args,
        ...(node === undefined ? {} : { node }),
        ...(slice === undefined ? {} : { slice }),
        stderr: (line) => options.stderr(`ipamkit: ${line}\n`),
        ...(command === "ADD" &&
        config.datastore === "kubernetes" &&
        config.kubernetes.whereaboutsLease !== undefined &&
        options.openExclusive !== undefined
          ? { exclusive: options.openExclusive(config, holderOf(args, env.containerId), slicePool) }
          : {}),
        // only the verbs that take an attachment read (and validate) it, as checkEnv requires
        ...(env.containerId !== undefined && env.ifName !== undefined && (command === "ADD" || command === "DEL" || command === "CHECK")
          ? { key: attachmentKey({ containerId: env.containerId, ifName: env.ifName }) }
          : {}),
      };
      await runCommand(command, ctx, options.stdout);
    } finally {
      await store.close().catch(() => undefined);
    }
    return 0;
  } catch (error) {
    const commandText = options.env.CNI_COMMAND;
    const cniError = toCniError(error, commandText === "STATUS" ? { command: "STATUS" } : {});
    options.stdout(errorJson(cniError, cniVersion));
    return 1;
  }
}
