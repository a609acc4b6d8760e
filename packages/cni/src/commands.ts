import {
  type AttachmentKey,
  attachmentKey,
  createIpam,
  createNodeBlockIpam,
  type Exclusive,
  findFree,
  formatIp,
  formatKey,
  type IpamCache,
  type IpamStore,
  ipAt,
  keepExpired,
  parseIp,
  parseRange,
  type Range,
  sliceRange,
} from "@ipamkit/core";
import { CNI_CODES, CniError } from "./errors.js";
import { type NodeSlice, noSliceError } from "./node-slice.js";
import { buildResult, parsePrevResult } from "./result.js";
import type { CniArgs, IpamConfig } from "./types.js";

export interface CommandContext {
  config: IpamConfig;
  ranges: readonly Range[];
  store: IpamStore;
  /**
   * What this process remembers of the store (the agent: claims and pools, kept across calls),
   * given to every allocator this call builds over `store`.
   */
  cache?: IpamCache;
  /** Present for ADD, DEL, CHECK. */
  key?: AttachmentKey;
  args: CniArgs;
  /** This node's name: `node_name`, else the host name (needed only with per-node blocks). */
  node?: string;
  /** Node slices (`node_slice_size`): this node's slice of the one range, as read for this call. */
  slice?: NodeSlice;
  stderr: (line: string) => void;
  /**
   * Held around an ADD's writes when the config asks for it (`whereabouts_lease`): the edge that
   * opened the store provides it (the Kubernetes store's `whereaboutsLease`).
   */
  exclusive?: Exclusive;
}

/**
 * A CNI call may take far longer than a library call: kubelet waits about 4 minutes for a sandbox
 * (Whereabouts allows 2 for ADD). Under contention (hundreds of ADDs on one pool at once) the
 * retry helper keeps going for up to 100 s before answering "try again later" (code 11).
 */
export const CNI_RETRY = { attempts: 100_000, deadlineMs: 100_000, baseDelayMs: 2, maxDelayMs: 200 } as const;

/** The store and the process's cache, as every allocator of this call is given them. */
function storeOf(ctx: CommandContext): { store: IpamStore; cache?: IpamCache } {
  return ctx.cache === undefined ? { store: ctx.store } : { store: ctx.store, cache: ctx.cache };
}

function ipamFor(ctx: CommandContext, exclusive?: Exclusive) {
  const options = {
    ...storeOf(ctx),
    overlappingRanges: ctx.config.overlappingRanges,
    policy: ctx.config.policy,
    retry: { ...CNI_RETRY },
    ...(exclusive === undefined ? {} : { exclusive }),
  };
  const blocks = ctx.config.nodeBlocks;
  if (blocks === undefined) return createIpam(options);
  return createNodeBlockIpam({ ...options, node: nodeOf(ctx), blockSize: blocks.size });
}

function nodeOf(ctx: CommandContext): string {
  const node = ctx.config.nodeBlocks?.node ?? ctx.node;
  if (node === undefined || node === "") {
    throw new CniError(CNI_CODES.INVALID_CONFIG, "ipam.node_block_size needs this node's name: set ipam.node_name (no host name is known)");
  }
  return node;
}

/** The pools GC and STATUS look at for a range: the range's own pool, or its block pools. */
async function poolsOf(ctx: CommandContext, range: Range): Promise<{ ref: { network: string; cidr: string }; range: Range }[]> {
  const network = ctx.config.networkName;
  if (ctx.config.nodeBlocks === undefined) return [{ ref: { network, cidr: range.cidr.text }, range }];
  const blocks = createNodeBlockIpam({ ...storeOf(ctx), node: nodeOf(ctx), blockSize: ctx.config.nodeBlocks.size });
  return (await blocks.blockPools(network, range)).map(({ ref, block }) => ({ ref, range: block }));
}

function needKey(ctx: CommandContext): AttachmentKey {
  if (ctx.key === undefined) throw new CniError(CNI_CODES.INVALID_ENV, "CNI_CONTAINERID and CNI_IFNAME are required");
  return ctx.key;
}

/** The Lease an ADD holds (`whereabouts_lease`); asked for but not provided is an error, never ignored. */
function leaseOf(ctx: CommandContext): Exclusive | undefined {
  const asked = ctx.config.kubernetes.whereaboutsLease;
  if (asked === undefined || ctx.config.datastore !== "kubernetes") return undefined;
  if (ctx.exclusive === undefined) {
    // auto: an edge that cannot hold it has nothing to coordinate with
    if (asked === "auto") return undefined;
    throw new CniError(CNI_CODES.UNSUPPORTED_FIELD, "ipam.whereabouts_lease: this plugin build cannot hold Whereabouts' Lease");
  }
  return ctx.exclusive;
}

/** ADD: one address per range, all-or-nothing, idempotent per (containerID, ifName). */
export async function add(ctx: CommandContext): Promise<object> {
  const { config, args } = ctx;
  // Requested addresses: runtimeConfig.ips / args.cni.ips win over the legacy CNI_ARGS IP=.
  const addresses = config.requestedIps.length > 0 ? config.requestedIps : args.ips;
  const podRef = args.podNamespace !== undefined && args.podName !== undefined ? `${args.podNamespace}/${args.podName}` : undefined;
  const assigned = await ipamFor(ctx, leaseOf(ctx)).allocate({
    network: config.networkName,
    ...where(ctx, "ADD"),
    key: needKey(ctx),
    addresses,
    ...(podRef === undefined ? {} : { podRef }),
    ...(args.podUid === undefined ? {} : { podUid: args.podUid }),
    ...(config.sticky === undefined ? {} : { sticky: config.sticky.keepSeconds }),
  });
  const gatewayOf = (range: Range) => config.gateways[ctx.ranges.indexOf(range)];
  return buildResult({
    cniVersion: config.cniVersion,
    ips: [
      ...assigned.map((a, i) => {
        // a node's slice answers with its range's prefix and gateway, as Whereabouts does
        const range = ctx.slice === undefined ? a.range : (ctx.ranges[i] as Range);
        const gateway = gatewayOf(range);
        return { address: a.address, prefix: range.cidr.prefix, ...(gateway === undefined ? {} : { gateway: parseIp(gateway) }) };
      }),
      // Whereabouts appends `addresses` (static) after the allocated ones
      ...config.staticAddresses.map(({ address, gateway }) => {
        const slash = address.indexOf("/");
        const ip = { address: parseIp(address.slice(0, slash)), prefix: Number(address.slice(slash + 1)) };
        return gateway === undefined ? ip : { ...ip, gateway: parseIp(gateway) };
      }),
    ],
    routes: config.routes,
    dns: config.dns,
  });
}

/**
 * Where a call allocates: each range's pool, or with node slices the node's slice pool (ADD, CHECK:
 * a node without a slice cannot answer yet, code 11 / 104).
 */
function where(ctx: CommandContext, command: "ADD" | "CHECK"): { ranges: readonly Range[]; node?: string } {
  const slice = ctx.slice;
  if (slice === undefined) return { ranges: ctx.ranges };
  if (slice.range === undefined) {
    const error = noSliceError(slice);
    throw command === "ADD" ? error : new CniError(CNI_CODES.CHECK_FAILED, error.message);
  }
  return { ranges: [slice.range], node: slice.node };
}

/**
 * DEL: releases by exact key in every range (ranges holding nothing are fine); store failures are
 * reported. With node slices: in the node's slice pool; a node without a slice (its NodeSlicePool
 * deleted with its network, or its slice freed) looks for the key in every pool of its own that
 * lies in the range, found by one listing, so a DEL never waits on a slice that may never come.
 */
export async function del(ctx: CommandContext): Promise<void> {
  const sticky = ctx.config.sticky !== undefined;
  const slice = ctx.slice;
  const network = ctx.config.networkName;
  const key = needKey(ctx);
  if (slice === undefined || slice.range !== undefined) {
    const ranges = slice?.range === undefined ? ctx.ranges : [slice.range];
    await ipamFor(ctx).release({
      network,
      ...(slice === undefined ? {} : { node: slice.node }),
      ranges,
      key,
      ...(sticky ? { sticky } : {}),
    });
    return;
  }
  const pools = await ownSlicePools(ctx, slice.node);
  if (pools.length > 0) await ipamFor(ctx).release({ network, node: slice.node, ranges: pools, key });
}

/** The node's own slice pools of the network's range (whatever slices it had), as ranges to release in. */
async function ownSlicePools(ctx: CommandContext, node: string): Promise<Range[]> {
  const range = ctx.ranges[0] as Range;
  const out: Range[] = [];
  for (const ref of await ctx.store.listPools()) {
    if (ref.network !== ctx.config.networkName || ref.node !== node) continue;
    try {
      out.push(sliceRange(range, ref.cidr) ?? parseRange({ range: ref.cidr }));
    } catch {
      // not a slice of this range: another configuration's pool
    }
  }
  return out;
}

/** CHECK: every range must hold a reservation for this key, and they must be exactly prevResult's addresses. */
export async function check(ctx: CommandContext): Promise<void> {
  const key = needKey(ctx);
  const at = where(ctx, "CHECK");
  const found = await ipamFor(ctx).lookup({ network: ctx.config.networkName, ...at, key });
  const missing = at.ranges.filter((_, i) => found[i] === undefined).map((r) => r.cidr.text);
  if (missing.length > 0) throw new CniError(CNI_CODES.CHECK_FAILED, `no reservation for ${formatKey(key)} in ${missing.join(", ")}`);
  if (ctx.config.prevResult === undefined) throw new CniError(CNI_CODES.INVALID_CONFIG, "CHECK needs prevResult");
  let previous: { address: string }[];
  try {
    previous = parsePrevResult(ctx.config.prevResult);
  } catch (error) {
    throw new CniError(CNI_CODES.DECODE_FAILURE, `prevResult: ${(error as Error).message}`);
  }
  const prefixOf = (a: { range: Range }, i: number) => (ctx.slice === undefined ? a.range : (ctx.ranges[i] as Range)).cidr.prefix;
  const held = found.flatMap((a, i) => (a === undefined ? [] : [`${formatIp(a.address)}/${prefixOf(a, i)}`])).sort();
  const prev = previous.map((p) => p.address).sort();
  if (held.join(",") !== prev.join(",")) {
    throw new CniError(
      CNI_CODES.CHECK_FAILED,
      `prevResult has ${prev.join(", ") || "no addresses"}, but ${formatKey(key)} holds ${held.join(", ")}`,
    );
  }
}

/**
 * GC: releases every reservation in this network's ranges whose attachment is not in
 * cni.dev/valid-attachments (an empty list means none is valid). Only on a node-local store: a
 * shared store holds other nodes' attachments, which this runtime cannot vouch for — there the
 * reconciler does the job, and GC says so on stderr. It continues past a pool it cannot read or
 * release in, then answers 11, or 102 when a pool is corrupt (trying again cannot help then).
 */
export async function gc(ctx: CommandContext): Promise<void> {
  if (ctx.store.capabilities.distributed) {
    ctx.stderr(`GC: not releasing anything on the shared ${ctx.store.name}: it holds other nodes' attachments; the reconciler cleans it`);
    return;
  }
  const attachments = ctx.config.validAttachments ?? [];
  const valid = new Set(
    attachments.map((a) => formatKey(attachmentKey({ containerId: a.containerID, ifName: a.ifname }, { allowLegacy: true }))),
  );
  // A legacy Whereabouts entry (no ifname) belongs to one of its container's interfaces: a valid
  // container keeps it (core's DESIGN.md, "Legacy entries").
  const validContainers = new Set(attachments.map((a) => a.containerID));
  const kept = (key: AttachmentKey) => valid.has(formatKey(key)) || (key.ifName === "" && validContainers.has(key.containerId));
  const ipam = createIpam({ ...storeOf(ctx), overlappingRanges: ctx.config.overlappingRanges, retry: { ...CNI_RETRY } });
  const failures: string[] = [];
  // a corrupt pool is not cured by trying again: then the answer is 102, not 11
  let corrupt = false;
  const failed = (what: string, error: unknown) => {
    const code = (error as { code?: unknown }).code;
    if (code === "POOL_CORRUPT" || code === "STORE_CORRUPT") corrupt = true;
    failures.push(`${what}: ${(error as Error).message}`);
  };
  for (const range of ctx.ranges) {
    try {
      for (const { ref, range: pooled } of await poolsOf(ctx, range)) {
        try {
          const stored = await ctx.store.readPool(ref);
          for (const r of stored?.pool ?? []) {
            if (kept(r.key)) continue;
            // sticky: a kept address waits out its keep time here too (the store may have no reconciler)
            if (ctx.config.sticky !== undefined && r.releasedAt !== undefined && !keepExpired(r, new Date())) continue;
            try {
              await ipam.releaseIf(ref, r);
            } catch (error) {
              failed(formatIp(ipAt(pooled.cidr, r.offset)), error);
            }
          }
        } catch (error) {
          failed(pooled.cidr.text, error);
        }
      }
    } catch (error) {
      failed(range.cidr.text, error);
    }
  }
  // Continue past errors, then report them (CNI GC semantics).
  if (failures.length > 0)
    throw new CniError(
      corrupt ? CNI_CODES.POOL_CORRUPT : CNI_CODES.TRY_AGAIN_LATER,
      `GC could not release everything: ${failures.join("; ")}`,
    );
}

/** STATUS: code 50 when the store is unreachable or every range is exhausted. */
export async function status(ctx: CommandContext): Promise<void> {
  let exhausted = 0;
  for (const range of ctx.ranges) {
    let room: boolean;
    try {
      room = await hasRoom(ctx, range);
    } catch (error) {
      if (error instanceof CniError) throw error;
      throw new CniError(CNI_CODES.NOT_AVAILABLE, `store unavailable: ${(error as Error).message}`);
    }
    if (!room) exhausted += 1;
  }
  if (exhausted === ctx.ranges.length)
    throw new CniError(CNI_CODES.NOT_AVAILABLE, `every range is exhausted: ${ctx.ranges.map((r) => r.cidr.text).join(", ")}`);
}

async function hasRoom(ctx: CommandContext, range: Range): Promise<boolean> {
  const slice = ctx.slice;
  if (slice !== undefined) {
    if (slice.range === undefined) throw new CniError(CNI_CODES.NOT_AVAILABLE, noSliceError(slice).message);
    const stored = await ctx.store.readPool({ network: ctx.config.networkName, cidr: slice.range.cidr.text, node: slice.node });
    return stored === undefined || findFree(stored.pool, slice.range, slice.range.first, slice.range.last) !== undefined;
  }
  const blocks = ctx.config.nodeBlocks;
  if (blocks !== undefined) {
    return createNodeBlockIpam({ ...storeOf(ctx), node: nodeOf(ctx), blockSize: blocks.size }).hasRoom(ctx.config.networkName, range);
  }
  const stored = await ctx.store.readPool({ network: ctx.config.networkName, cidr: range.cidr.text });
  return stored === undefined || findFree(stored.pool, range, range.first, range.last) !== undefined;
}
