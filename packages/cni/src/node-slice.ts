import { parseCidr, type Range, sliceRange } from "@ipamkit/core";
import { configurationPathFile } from "./config-paths.js";
import { CNI_CODES, CniError } from "./errors.js";
import type { ConfigFs, IpamConfig } from "./types.js";

// Whereabouts' node slices (`node_slice_size`) on the plugin's side: which node this is, and which
// slice of the range its NodeSlicePool assigns it. The NodeSlicePool is read by the edge that opened
// the store (the Kubernetes store's `readNodeSlice`), as the Lease is.

/** What the edge reads of the NodeSlicePool (storage-kubernetes `NodeSliceAnswer`). */
export interface NodeSliceAnswer {
  /** `namespace/name`, for messages. */
  pool: string;
  exists: boolean;
  /** The slice assigned to the node (CIDR), when one is. */
  slice?: string;
}

/** Reads the NodeSlicePool `name` of the config's store for `node`. */
export type ReadNodeSlice = (config: IpamConfig, query: { name: string; node: string }) => Promise<NodeSliceAnswer>;

/** The node's slice, as the commands use it. */
export interface NodeSlice {
  node: string;
  /** `namespace/name` of the NodeSlicePool. */
  pool: string;
  /** Whether the NodeSlicePool exists. */
  exists: boolean;
  /** The slice assigned to the node (canonical CIDR), or undefined when none is. */
  slice: string | undefined;
  /** The config's one range as the node's slice (core `sliceRange`); undefined when no slice is assigned. */
  range: Range | undefined;
}

/** Whereabouts reads at most this much of the nodename file and of /etc/hostname. */
const NAME_FILE_BYTES = 1024;

/** The directory of the node's configuration path (the installer's `whereabouts.d`): its own, or its flat file's. */
function configurationDir(fs: ConfigFs, flatFile: string | undefined): string | undefined {
  const file = fs.configurationPath !== undefined && fs.configurationPath !== "" ? configurationPathFile(fs.configurationPath) : flatFile;
  if (file === undefined) return undefined;
  const slash = file.lastIndexOf("/");
  return slash <= 0 ? "/" : file.slice(0, slash);
}

function firstLineOf(fs: ConfigFs, path: string): string | undefined {
  try {
    if (!fs.exists(path)) return undefined;
    const name = fs.readText(path).slice(0, NAME_FILE_BYTES).trim();
    return name === "" ? undefined : name;
  } catch {
    return undefined;
  }
}

/**
 * This node's name for node slices, in Whereabouts' order: the call's `NODENAME`; the name this
 * process was given for its node (the agent's `--node-name`: the runtime's environment does not
 * reach the agent); `<configuration path>/nodename` (the installer writes it beside the flat file;
 * the configuration path is the node's, `IPAMKIT_CONFIGURATION_PATH`, else the flat file's
 * directory); `/etc/hostname`. Empty values are passed over. None: code 7.
 */
export function sliceNodeName(options: {
  env: Readonly<Record<string, string | undefined>>;
  nodeName?: string | undefined;
  fs: ConfigFs;
  flatFile: string | undefined;
}): string {
  const fromEnv = options.env.NODENAME?.trim();
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  if (options.nodeName !== undefined && options.nodeName !== "") return options.nodeName;
  const dir = configurationDir(options.fs, options.flatFile);
  const fromFile = dir === undefined ? undefined : firstLineOf(options.fs, `${dir === "/" ? "" : dir}/nodename`);
  const name = fromFile ?? firstLineOf(options.fs, "/etc/hostname");
  if (name === undefined) {
    throw new CniError(
      CNI_CODES.INVALID_CONFIG,
      `ipam.node_slice_size needs this node's name: set NODENAME, or write it to ${dir === undefined ? "<configuration path>" : dir}/nodename or /etc/hostname`,
    );
  }
  return name;
}

/**
 * Reads the node's slice and makes the config's range that slice. A NodeSlicePool missing, or no
 * slice for the node, is `range: undefined` (the command decides: ADD fails with code 11); a slice
 * that is not inside the range (the NodeSlicePool was made for another range, and its controller
 * has not re-sliced it yet) is code 11; a slice with nothing to hand out (all excluded, outside
 * range_start/range_end) is code 100.
 */
export async function readSlice(read: ReadNodeSlice, config: IpamConfig, range: Range, node: string): Promise<NodeSlice> {
  const name = config.nodeSlices?.pool ?? config.networkName;
  const answer = await read(config, { name, node });
  if (answer.slice === undefined) return { node, pool: answer.pool, exists: answer.exists, slice: undefined, range: undefined };
  const cidr = parseCidr(answer.slice);
  let sliced: Range | undefined;
  try {
    sliced = sliceRange(range, cidr);
  } catch {
    throw new CniError(
      CNI_CODES.TRY_AGAIN_LATER,
      `NodeSlicePool ${answer.pool} gives node ${node} the slice ${cidr.text}, which is not inside this network's range ${range.cidr.text}: it was made for another range (its controller re-slices it); try again later`,
    );
  }
  if (sliced === undefined) {
    throw new CniError(
      CNI_CODES.RANGE_EXHAUSTED,
      `node ${node}'s slice ${cidr.text} (NodeSlicePool ${answer.pool}) holds no address this network hands out (range_start/range_end, exclude)`,
    );
  }
  return { node, pool: answer.pool, exists: true, slice: cidr.text, range: sliced };
}

/** ADD (and STATUS): a node without a slice cannot allocate yet — code 11, naming the NodeSlicePool. */
export function noSliceError(slice: NodeSlice): CniError {
  const who = "Whereabouts' node-slice controller, or ipamkit's reconciler with --node-slices true";
  return new CniError(
    CNI_CODES.TRY_AGAIN_LATER,
    slice.exists
      ? `no slice of NodeSlicePool ${slice.pool} is assigned to node ${slice.node} yet (${who}, assigns one): try again later`
      : `NodeSlicePool ${slice.pool} does not exist (yet): Whereabouts' node-slice controller creates it for a network with node_slice_size; try again later`,
  );
}
