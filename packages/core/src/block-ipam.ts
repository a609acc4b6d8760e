import { type CallCommit, callCommit, FenceBrokenError, type PoolFence } from "./block-commit.js";
import { type Fence, type Known, planAdd, recalledHolder, roomIn, searched } from "./block-plan.js";
import { readNodeView } from "./block-view.js";
import { InvalidRequestError, isOutcomeUnknown, RangeExhaustedError, StoreConflictError } from "./errors.js";
import { cidrContains, parseCidr } from "./ip.js";
import { type AllocateInput, type Assigned, createIpam, type IpamOptions, type Released, type ReleaseInput } from "./ipam.js";
import type { IpamCache } from "./ipam-cache.js";
import { type AttachmentKey, attachmentKey } from "./key.js";
import { keyQueue } from "./key-queue.js";
import { AFFINITY_IF_NAME, affinityClaimRef, type BlockLayout, blockLayout, blockPoolRef, blockRange } from "./node-blocks.js";
import { Pool } from "./pool.js";
import { protocolBreaks } from "./protocol-breaks.js";
import type { Range } from "./range.js";
import { type ConflictCounter, withConflictRetry } from "./retry.js";
import { type IpamStore, type PoolRef, poolId } from "./store.js";

export interface NodeBlockIpamOptions extends IpamOptions {
  /** This node's name: it owns the blocks it claims under this name. */
  node: string;
  /** Addresses per block: a power of two, at least 4 (e.g. 16, 64). */
  blockSize: number | bigint;
}

/** A block pool that exists in the store, with its block as a range. */
export interface BlockPool {
  ref: PoolRef;
  block: Range;
}

/**
 * The IPAM of a node with per-node blocks: the same calls as {@link createIpam}, but each range is
 * served from the blocks this node has claimed. Requested (static) addresses are refused: a static
 * address may lie in another node's block, where this node's DEL would not look for it.
 */
export interface NodeBlockIpam {
  allocate(input: AllocateInput): Promise<Assigned[]>;
  release(input: ReleaseInput): Promise<Released[]>;
  lookup(input: ReleaseInput): Promise<(Assigned | undefined)[]>;
  /** True when this node could still allocate in `range` (a free address in its blocks, or a block to claim). */
  hasRoom(network: string | undefined, range: Range): Promise<boolean>;
  /** Every stored block pool of `range` (any node's), for node-local GC. */
  blockPools(network: string | undefined, range: Range): Promise<BlockPool[]>;
  readonly conflicts: ConflictCounter;
}

/** Re-reads of the node's view while choosing one block (a claim lost to another node, or just won). */
const MAX_REPLANS = 16;

/** What every call of one node's block IPAM works with (the executor's side; the planner is block-plan.ts). */
interface BlockContext {
  readonly options: NodeBlockIpamOptions;
  /** The store, behind the cache when one is given (it answers and learns from every call). */
  readonly store: IpamStore;
  readonly cache: IpamCache | undefined;
  readonly affinityKey: AttachmentKey;
  readonly counter: ConflictCounter;
  layoutOf(range: Range): BlockLayout;
}

export function createNodeBlockIpam(options: NodeBlockIpamOptions): NodeBlockIpam {
  const { cache } = options;
  const layouts = new Map<Range, BlockLayout>();
  const ctx: BlockContext = {
    options,
    store: cache === undefined ? options.store : cache.watch(options.store),
    cache,
    affinityKey: attachmentKey({ containerId: options.node, ifName: AFFINITY_IF_NAME }),
    counter: options.retry?.counter ?? { conflicts: 0 },
    layoutOf(range) {
      const layout = layouts.get(range) ?? blockLayout(range, options.blockSize);
      layouts.set(range, layout);
      return layout;
    },
  };
  // one process's calls of one key in order: a second ADD of a key while the first is running
  // (a runtime's retry) would choose from reads the first makes stale, where no commit fences them
  const inOrder = keyQueue();
  return {
    conflicts: ctx.counter,
    allocate: (input) => inOrder(input.key, () => allocate(ctx, input)),
    release: (input) => inOrder(input.key, () => release(ctx, input)),
    lookup: (input) => inOrder(input.key, () => lookup(ctx, input)),
    hasRoom: (network, range) => hasRoom(ctx, network ?? "", range),
    blockPools: (network, range) => blockPools(ctx, network ?? "", range),
  };
}

/** One call's commit (hand-off, and fences on writes placing `key`) and the inner IPAM that reads and writes through it. */
function callScope(ctx: BlockContext, key?: AttachmentKey) {
  const commit = callCommit(ctx.store, key);
  const retry = { ...ctx.options.retry, counter: ctx.counter };
  return { commit, ipam: createIpam({ ...ctx.options, cache: undefined, retry, store: commit.store }) };
}

async function allocate(ctx: BlockContext, input: AllocateInput): Promise<Assigned[]> {
  if ((input.addresses ?? []).length > 0) {
    throw new InvalidRequestError("requested addresses are not supported with per-node blocks (node_block_size)");
  }
  if (input.ranges.length === 0) throw new InvalidRequestError("no ranges to allocate from");
  const network = input.network ?? "";
  const object = `node blocks of ${input.ranges.map((r) => r.cidr.text).join(", ")}`;
  let recall = true;
  // the one retry helper plans again, after a backoff: a fresh scope per attempt (what an attempt
  // handed on or fenced and did not use dies with it)
  return withConflictRetry(
    async () => {
      const { commit, ipam } = callScope(ctx, input.key);
      const blocks: Range[] = [];
      for (const range of input.ranges) blocks.push(await chooseBlock(ctx, { network, range, key: input.key, commit, recall }));
      try {
        const assigned = await ipam.allocate({ ...input, network, ranges: blocks });
        return assigned.map((a, i) => ({ ...a, range: input.ranges[i] as Range }));
      } catch (error) {
        // A fenced choice rested on a pool that changed (plan again from fresh reads), or the
        // chosen block filled up after it was read (another call on this node): choose again.
        if (error instanceof FenceBrokenError) recall = false;
        if (error instanceof FenceBrokenError || error instanceof RangeExhaustedError) throw new StoreConflictError(object);
        throw error;
      }
    },
    { ...ctx.options.retry, counter: ctx.counter },
  );
}

interface Choice {
  network: string;
  range: Range;
  key: AttachmentKey;
  commit: CallCommit;
  /** Whether pools may be taken as recalled (the IpamCache); false after a broken fence. */
  recall: boolean;
}

/**
 * The executor of one range's ADD: reads what the planner asks for, then hands the chosen block's
 * pool to the inner IPAM and registers the plan's fences, or claims the block first.
 */
async function chooseBlock(ctx: BlockContext, choice: Choice): Promise<Range> {
  const { network, range, key, commit } = choice;
  for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
    const view = await readNodeView(ctx.store, network, ctx.layoutOf(range), ctx.options.node);
    const known = new Map<Range, Known>();
    for (const block of choice.recall && ctx.cache !== undefined ? searched(view) : []) {
      const stored = ctx.cache?.recall(blockPoolRef(network, block));
      if (stored !== undefined) known.set(block, { stored, fresh: false });
    }
    const input = { view, known, key };
    let plan = planAdd(input);
    for (; plan.kind === "read"; plan = planAdd(input)) {
      known.set(plan.block, { stored: await ctx.store.readPool(blockPoolRef(network, plan.block)), fresh: true });
    }
    if (plan.kind === "full") throw new RangeExhaustedError(range.cidr.text);
    if (plan.kind === "claim") {
      // Claimed (or lost to another node): plan again from a fresh view. The allocation must not
      // rest on "the node has no other block" — a commit retried later would still rest on it
      // while another writer of the key claims the next block and places the key there.
      await claimBlock(ctx, network, plan.block);
      if (protocolBreaks.giveUpAfterClaim) throw new RangeExhaustedError(range.cidr.text);
      continue;
    }
    commit.hand(blockPoolRef(network, plan.block), known.get(plan.block)?.stored);
    if (plan.kind === "write" && !protocolBreaks.noTouch) for (const fence of plan.fences) commit.fence(poolFence(network, fence, known));
    return plan.block;
  }
  throw new StoreConflictError(`node blocks of ${range.cidr.text}`);
}

/** A planned fence as the commit applies it (block-commit.ts). */
function poolFence(network: string, fence: Fence, known: ReadonlyMap<Range, Known>): PoolFence {
  const ref = blockPoolRef(network, fence.block);
  const empty = Pool.empty(fence.block.cidr, { name: poolId(ref) });
  if (fence.unclaimed) return { ref, stored: undefined, empty, unclaimed: affinityClaimRef(network, fence.block) };
  return { ref, stored: known.get(fence.block)?.stored, empty };
}

/** Claims `block` for this node; another node's claim first, or an unknown outcome, is left to the next view. */
async function claimBlock(ctx: BlockContext, network: string, block: Range): Promise<void> {
  try {
    await ctx.store.writeClaim(affinityClaimRef(network, block), { pool: blockPoolRef(network, block), key: ctx.affinityKey }, undefined);
  } catch (error) {
    // the view reads the claims afresh: a claim of ours that landed is then one of this node's blocks
    if (isOutcomeUnknown(error)) ctx.counter.unknownOutcomes = (ctx.counter.unknownOutcomes ?? 0) + 1;
    else if (error instanceof StoreConflictError) ctx.counter.conflicts += 1;
    else throw error;
  }
}

/** The searched blocks holding `key`, their pools handed on; with `recall`, one held as last seen may answer. */
async function holding(
  ctx: BlockContext,
  network: string,
  range: Range,
  key: AttachmentKey,
  commit: CallCommit,
  recall: boolean,
): Promise<Range[]> {
  const blocks = searched(await readNodeView(ctx.store, network, ctx.layoutOf(range), ctx.options.node));
  const { cache } = ctx;
  const quick =
    recall && cache !== undefined ? recalledHolder(blocks, (block) => cache.recall(blockPoolRef(network, block)), key) : undefined;
  if (quick !== undefined) {
    commit.hand(blockPoolRef(network, quick), cache?.recall(blockPoolRef(network, quick)));
    return [quick];
  }
  const found: Range[] = [];
  for (const block of blocks) {
    const ref = blockPoolRef(network, block);
    const stored = await ctx.store.readPool(ref);
    if (stored?.pool.forKey(key) === undefined) continue;
    found.push(block);
    commit.hand(ref, stored);
  }
  return found;
}

/**
 * A DEL, range by range. The block holding the key may be taken as last seen (its release writes
 * at that version); when that write meets a changed pool that no longer holds the key (released
 * and placed again elsewhere by another writer), the node's blocks are searched afresh.
 */
async function release(ctx: BlockContext, input: ReleaseInput): Promise<Released[]> {
  const network = input.network ?? "";
  const out: Released[] = [];
  const errors: unknown[] = [];
  for (const range of input.ranges) {
    try {
      for (const recall of [true, false]) {
        const { commit, ipam } = callScope(ctx);
        const blocks = await holding(ctx, network, range, input.key, commit, recall);
        const released = blocks.length === 0 ? [] : await ipam.release({ network, ranges: blocks, key: input.key });
        out.push(...released);
        if (blocks.length === 0 || released.length > 0) break;
      }
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw errors[0];
  return out;
}

async function lookup(ctx: BlockContext, input: ReleaseInput): Promise<(Assigned | undefined)[]> {
  const network = input.network ?? "";
  const out: (Assigned | undefined)[] = [];
  for (const range of input.ranges) {
    const { commit, ipam } = callScope(ctx);
    const [block] = await holding(ctx, network, range, input.key, commit, false);
    const [found] = block === undefined ? [undefined] : await ipam.lookup({ network, ranges: [block], key: input.key });
    out.push(found === undefined ? undefined : { ...found, range });
  }
  return out;
}

async function hasRoom(ctx: BlockContext, network: string, range: Range): Promise<boolean> {
  const view = await readNodeView(ctx.store, network, ctx.layoutOf(range), ctx.options.node);
  // an unclaimed block, as read from the store (never from memory), is room
  if (view.unclaimed !== undefined) return true;
  for (const block of searched(view)) {
    const stored = await ctx.store.readPool(blockPoolRef(network, block));
    if (stored === undefined || roomIn(stored.pool, block)) return true;
  }
  return false;
}

async function blockPools(ctx: BlockContext, network: string, range: Range): Promise<BlockPool[]> {
  const layout = ctx.layoutOf(range);
  const out: BlockPool[] = [];
  for (const ref of await ctx.store.listPools()) {
    if (ref.network !== network) continue;
    const cidr = parseCidr(ref.cidr);
    if (
      cidr.family !== range.family ||
      cidr.prefix !== layout.prefix ||
      !cidrContains(range.cidr, { family: cidr.family, value: cidr.network })
    ) {
      continue;
    }
    const block = blockRange(layout, (cidr.network - range.cidr.network) / layout.size);
    if (block !== undefined) out.push({ ref, block });
  }
  return out;
}
