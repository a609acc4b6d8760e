import { findFree } from "./allocator.js";
import { readClaimsOf } from "./claims.js";
import { delegatingStore } from "./complete-store.js";
import { InvalidRequestError, isOutcomeUnknown, RangeExhaustedError, StoreConflictError } from "./errors.js";
import { cidrContains, parseCidr } from "./ip.js";
import { type AllocateInput, type Assigned, createIpam, type IpamOptions, type Released, type ReleaseInput } from "./ipam.js";
import { type AttachmentKey, attachmentKey } from "./key.js";
import { keyQueue } from "./key-queue.js";
import {
  AFFINITY_IF_NAME,
  affinityClaimRef,
  type BlockLayout,
  blockLayout,
  blockPoolRef,
  blockRange,
  nodeBlockOrder,
} from "./node-blocks.js";
import type { Pool } from "./pool.js";
import type { Range } from "./range.js";
import type { ConflictCounter } from "./retry.js";
import type { IpamStore, PoolRef, StoredPool, StoreWrite, Version } from "./store.js";

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

/** What the node sees along its block order: its blocks, the first unclaimed block, or (none unclaimed) everyone's. */
interface NodeView {
  own: Range[];
  unclaimed: Range | undefined;
  /** Other nodes' blocks — only collected when no block is unclaimed (then this node may borrow). */
  others: Range[];
}

/** Affinity claims read in the first request of a walk along the node's order, where the store reads several at once. */
const READ_AHEAD = 8;
/** At most this many in one request (a store may split more into several requests anyway). */
const READ_AHEAD_MAX = 64;

/** Re-plans after a block filled up between the read and the write, or a claim was lost. */
const MAX_REPLANS = 16;

/**
 * Searched blocks at most for a fenced ADD: a node holds one or two per network, and each fence is
 * one more compare in the transaction (a transaction holds a bounded number of operations). A node that
 * borrows searches everyone's blocks; it reads them.
 */
const MAX_FENCED_BLOCKS = 8;

/**
 * The block pools a call has just read, handed to the inner IPAM's next read of the same pool in
 * the same call: choosing a block and then writing it (or finding a key and releasing it) cost one
 * read, not two.
 * A read handed on stale costs only a compare-and-swap conflict and a fresh read: the write is
 * still conditional on the version read, so safety never rests on the hand-off.
 */
function readHandoff(store: IpamStore) {
  /** Pools handed on; undefined: known to be absent (no pool written yet). */
  const ready = new Map<string, StoredPool | undefined>();
  const fences = new Map<string, StoreWrite & { kind: "check-pool" }>();
  const id = (ref: PoolRef) => `${ref.network}\u0000${ref.cidr}`;
  const readPool = (ref: PoolRef): Promise<StoredPool | undefined> => {
    if (!ready.has(id(ref))) return store.readPool(ref);
    const handed = ready.get(id(ref));
    ready.delete(id(ref));
    return Promise.resolve(handed);
  };
  /** Whether every fenced pool is still at the version the choice saw. */
  const fencesHold = async (): Promise<boolean> => {
    for (const fence of fences.values()) if ((await store.readPool(fence.ref))?.version !== fence.expected) return false;
    return true;
  };
  /**
   * An allocation's commit (it has a reserve step) carries the call's fences. On a conflict, a
   * broken fence asks for a fresh plan; with every fence holding, the conflict is the commit's own
   * (the address taken, a claim there) and goes back to the inner IPAM's retry, as unfenced.
   */
  const fencedCommit = async (writes: readonly StoreWrite[]) => {
    if (fences.size === 0 || !writes.some((w) => w.kind === "reserve")) return store.commit(writes);
    try {
      return (await store.commit([...writes, ...fences.values()])).slice(0, writes.length);
    } catch (error) {
      if (!(error instanceof StoreConflictError) || (await fencesHold())) throw error;
      throw new FenceBrokenError();
    }
  };
  return {
    /** The store as the call's inner IPAM sees it: pools handed on, commits fenced. */
    store: delegatingStore(store, { readPool, commit: fencedCommit }),
    /** The pool as just read, or undefined: no pool there (as read, or a block just claimed). */
    hand(ref: PoolRef, stored: StoredPool | undefined): void {
      ready.set(id(ref), stored);
    },
    /** The call's allocation commits only if this pool is still at `version` (a compare-only step). */
    fence(ref: PoolRef, version: Version | undefined): void {
      fences.set(id(ref), { kind: "check-pool", ref, expected: version });
    },
  };
}

/**
 * A fenced allocation's commit met a conflict: one of the pools its choice rested on changed since
 * this process last saw it (or the address was taken). Nothing was written; the caller plans again
 * from fresh reads. Not a StoreConflictError, so the inner IPAM does not retry the same choice.
 */
class FenceBrokenError extends Error {
  constructor() {
    super("a pool this allocation's choice rested on changed; plan again");
    this.name = "FenceBrokenError";
  }
}

/** Whether `pool` has a free address in `block`. */
const roomIn = (pool: Pool, block: Range): boolean => findFree(pool, block, block.first, block.last) !== undefined;

/** The next block along a node's order (skipping positions outside the range), or undefined at its end. */
function nextBlock(layout: BlockLayout, order: Generator<bigint>): Range | undefined {
  for (let step = order.next(); !step.done; step = order.next()) {
    const block = blockRange(layout, step.value);
    if (block !== undefined) return block;
  }
  return undefined;
}

export function createNodeBlockIpam(options: NodeBlockIpamOptions): NodeBlockIpam {
  const { node, cache } = options;
  // the cache learns from every call of this IPAM (its inner IPAMs read and write through this)
  const store = cache === undefined ? options.store : cache.watch(options.store);
  const recallPool = (ref: PoolRef): StoredPool | undefined => cache?.recall(ref);
  const affinityKey: AttachmentKey = attachmentKey({ containerId: node, ifName: AFFINITY_IF_NAME });
  const counter: ConflictCounter = options.retry?.counter ?? { conflicts: 0 };
  /**
   * One call's hand-off and the inner IPAM that reads through it. Per call, never shared: a read
   * handed to a concurrent call of the same block could be older than that call's own, and a
   * release finding no key in it would write nothing that could fail — a DEL missed.
   */
  const callScope = () => {
    const handoff = readHandoff(store);
    return { handoff, ipam: createIpam({ ...options, cache: undefined, retry: { ...options.retry, counter }, store: handoff.store }) };
  };
  type Handoff = ReturnType<typeof readHandoff>;
  const layouts = new Map<Range, BlockLayout>();
  const layoutOf = (range: Range): BlockLayout => {
    const known = layouts.get(range);
    if (known !== undefined) return known;
    const layout = blockLayout(range, options.blockSize);
    layouts.set(range, layout);
    return layout;
  };

  /**
   * The node's blocks along its order, up to the first unclaimed one. A claim seen may come from
   * memory (withAffinityCache: claims are never deleted), "unclaimed" always comes from the store:
   * the blocks that may hold this node's keys are exactly those before it. Where the store reads
   * several claims in one request, the claims are read ahead in windows along the order
   * (READ_AHEAD, doubling up to READ_AHEAD_MAX): a node whose next blocks other nodes took walks
   * past them in one request, not one each. Claims read beyond the first unclaimed one are only
   * remembered (withAffinityCache), never used.
   */
  async function view(network: string, range: Range): Promise<NodeView> {
    const seen: NodeView = { own: [], unclaimed: undefined, others: [] };
    const layout = layoutOf(range);
    const order = nodeBlockOrder(layout, node);
    const batches = store.capabilities.batchReads;
    for (let window = batches ? READ_AHEAD : 1; ; window = batches ? Math.min(window * 2, READ_AHEAD_MAX) : 1) {
      const blocks: Range[] = [];
      while (blocks.length < window) {
        const block = nextBlock(layout, order);
        if (block === undefined) break;
        blocks.push(block);
      }
      if (blocks.length === 0) return seen;
      const claims = await readClaimsOf(
        store,
        blocks.map((block) => affinityClaimRef(network, block)),
      );
      for (const [i, block] of blocks.entries()) {
        const stored = claims[i];
        if (stored === undefined) return { ...seen, unclaimed: block, others: [] };
        (stored.claim.key.containerId === node ? seen.own : seen.others).push(block);
      }
    }
  }

  /** The blocks that may hold this node's reservations (its own; everyone's once none is unclaimed). */
  const searched = (seen: NodeView): Range[] => (seen.unclaimed === undefined ? [...seen.own, ...seen.others] : seen.own);

  /** The blocks holding `key`, their reads handed on to the call's inner IPAM. */
  async function holding(network: string, range: Range, key: AttachmentKey, handoff: Handoff, recall = false): Promise<Range[]> {
    return search(network, searched(await view(network, range)), key, handoff, recall);
  }

  async function search(network: string, blocks: Range[], key: AttachmentKey, handoff: Handoff, recall: boolean): Promise<Range[]> {
    // Held in one of them, as last seen: the release's write at that version checks it, and a key
    // is held in one block at most — so this holds over any number of searched blocks. (Not held:
    // a release that finds nothing writes nothing, so that is always read afresh.)
    const quick = recall ? recalledHolder(network, blocks, handoff, key) : undefined;
    if (quick !== undefined) return [quick];
    const found: Range[] = [];
    for (const block of blocks) {
      const ref = blockPoolRef(network, block);
      const stored = await store.readPool(ref);
      if (stored?.pool.forKey(key) === undefined) continue;
      found.push(block);
      handoff.hand(ref, stored);
    }
    return found;
  }

  /** The searched block whose pool, as this process last saw it (the PoolCache), holds `key`; its pool handed on. */
  function recalledHolder(network: string, blocks: Range[], handoff: Handoff, key: AttachmentKey): Range | undefined {
    if (cache === undefined) return undefined;
    for (const block of blocks) {
      const ref = blockPoolRef(network, block);
      const stored = recallPool(ref);
      if (stored?.pool.forKey(key) === undefined) continue;
      handoff.hand(ref, stored);
      return block;
    }
    return undefined;
  }

  /**
   * A searched block with room, chosen from the pools as this process last saw them
   * (the PoolCache) when none of them holds `key`; that pool handed on. Safe only because the
   * caller's next step is the allocation's compare-and-swap commit, which must validate the whole
   * choice: with the node's only searched block, "the key is not held" is a fact about that one
   * pool, checked by the write at its recalled version. With several (`fenced`, on a store with
   * entry-level commits, at most MAX_FENCED_BLOCKS), every other searched block is fenced at its
   * recalled version: a compare-only check-pool step in the same transaction, which conflicts if
   * that pool changed at all, while the reserve step conflicts if the chosen pool holds the key.
   */
  function recalledWithRoom(network: string, seen: NodeView, handoff: Handoff, key: AttachmentKey, fenced: boolean): Range | undefined {
    const blocks = searched(seen);
    if (blocks.length === 0 || cache === undefined) return undefined;
    const canFence = fenced && store.capabilities.entryWrites;
    if (blocks.length > 1 && !(canFence && blocks.length <= MAX_FENCED_BLOCKS)) return undefined;
    const recalled: { block: Range; ref: PoolRef; stored: StoredPool }[] = [];
    for (const block of blocks) {
      const ref = blockPoolRef(network, block);
      const stored = recallPool(ref);
      if (stored === undefined || stored.pool.forKey(key) !== undefined) return undefined;
      recalled.push({ block, ref, stored });
    }
    const chosen = recalled.find((r) => roomIn(r.stored.pool, r.block));
    if (chosen === undefined) return undefined;
    handoff.hand(chosen.ref, chosen.stored);
    fenceChoice(network, seen, chosen.block, new Map(recalled.map((r) => [r.block, r.stored.version])), handoff);
    return chosen.block;
  }

  /**
   * Over several searched blocks that cannot all be fenced (stores without entry-level commits,
   * without `capabilities.entryWrites`): the last searched block whose pool, as last seen, has room and
   * does not hold `key`. The search reads every other block afresh but takes this one as
   * recalled: the key is then in none of the others as read (as when all are read), and in this
   * one at the allocation's commit, which is made at the recalled version and conflicts if the
   * pool changed at all (then it is read afresh). Should an earlier block have room after all (a
   * release behind this process's back), that one is written, and this one is read before it.
   * The last, because a node fills its blocks in order: its newest block is the one it writes, so
   * its recall is the freshest (after a power-cycle, the first block is full of dead sandboxes and
   * every ADD goes to the second).
   */
  function recalledCandidate(network: string, blocks: Range[], key: AttachmentKey): { block: Range; stored: StoredPool } | undefined {
    if (blocks.length < 2 || cache === undefined) return undefined;
    for (const block of [...blocks].reverse()) {
      const stored = recallPool(blockPoolRef(network, block));
      if (stored !== undefined && stored.pool.forKey(key) === undefined && roomIn(stored.pool, block)) return { block, stored };
    }
    return undefined;
  }

  /**
   * The one rule of the executor, on stores with entry-level commits: the allocation's commit also
   * compares every block the choice of `chosen` rested on — each other searched block at the
   * version it was seen at, and the first unclaimed block's pool as absent — so "the key is in
   * none of them" holds at the commit, whoever else writes (a second writer of the same key may
   * otherwise fill the node's block while this one claims the next, or place the key in a block
   * this one read before). At most MAX_FENCED_BLOCKS (a node that borrows searches everyone's
   * blocks); stores without transactions cannot fence: see DESIGN.md for what that leaves.
   */
  function fenceChoice(network: string, seen: NodeView, chosen: Range, versions: Map<Range, Version | undefined>, handoff: Handoff) {
    if (!store.capabilities.entryWrites) return;
    const relied = searched(seen).filter((block) => block !== chosen);
    if (seen.unclaimed !== undefined && seen.unclaimed !== chosen) relied.push(seen.unclaimed);
    if (relied.length > MAX_FENCED_BLOCKS) return;
    for (const block of relied) handoff.fence(blockPoolRef(network, block), versions.get(block));
  }

  /** The block to allocate `key` in: where it already is, else a block with room, else a newly claimed one. */
  async function chooseBlock(network: string, range: Range, key: AttachmentKey, handoff: Handoff, recall: boolean): Promise<Range> {
    for (let attempt = 0; attempt < MAX_REPLANS; attempt++) {
      const seen = await view(network, range);
      const blocks = searched(seen);
      // Not held and room, as last seen: the allocation's write at that version checks both. (Held:
      // an ADD that finds its key writes nothing, so that is never taken from a recalled pool.)
      const quick = recalledWithRoom(network, seen, handoff, key, recall);
      if (quick !== undefined) return quick;
      const spared = recall ? recalledCandidate(network, blocks, key) : undefined;
      /** The first block with room, and its pool as read or recalled. */
      const room: { block?: Range; stored?: StoredPool } = {};
      /** The version of every searched block as the choice saw it (undefined: no pool). */
      const versions = new Map<Range, Version | undefined>();
      /** Takes a block's pool in order: true when it holds the key (handed on), else notes the first with room. */
      const holds = (block: Range, stored: StoredPool | undefined): boolean => {
        versions.set(block, stored?.version);
        if (stored?.pool.forKey(key) !== undefined) {
          handoff.hand(blockPoolRef(network, block), stored);
          return true;
        }
        if (room.block === undefined && (stored === undefined || roomIn(stored.pool, block))) Object.assign(room, { block, stored });
        return false;
      };
      for (const block of blocks) {
        const stored = block === spared?.block ? spared.stored : await store.readPool(blockPoolRef(network, block));
        if (holds(block, stored)) return block;
      }
      if (spared !== undefined && room.block !== spared.block) {
        // another block is written: "not held" in the spared one must then be read, not recalled
        const ref = blockPoolRef(network, spared.block);
        const fresh = await store.readPool(ref);
        versions.set(spared.block, fresh?.version);
        if (fresh?.pool.forKey(key) !== undefined) {
          handoff.hand(ref, fresh);
          return spared.block;
        }
      }
      if (room.block !== undefined) {
        handoff.hand(blockPoolRef(network, room.block), room.stored);
        fenceChoice(network, seen, room.block, versions, handoff);
        return room.block;
      }
      if (seen.unclaimed === undefined) throw new RangeExhaustedError(range.cidr.text);
      try {
        const claim = { pool: blockPoolRef(network, seen.unclaimed), key: affinityKey };
        await store.writeClaim(affinityClaimRef(network, seen.unclaimed), claim, undefined);
        // A block nobody had claimed has no pool yet (nodes write only blocks claimed, their own or
        // borrowed), so the allocation starts from none instead of reading it. Should a pool be
        // there after all, the allocation's compare-and-swap conflicts and reads it afresh.
        handoff.hand(claim.pool, undefined);
        fenceChoice(network, seen, seen.unclaimed, versions, handoff);
        return seen.unclaimed;
      } catch (error) {
        // another node claimed it first, or the claim's outcome is unknown: look again (the view
        // reads the claims afresh: a claim of ours that landed is then one of this node's blocks)
        if (isOutcomeUnknown(error)) counter.unknownOutcomes = (counter.unknownOutcomes ?? 0) + 1;
        else if (error instanceof StoreConflictError) counter.conflicts += 1;
        else throw error;
      }
    }
    throw new StoreConflictError(`node blocks of ${range.cidr.text}`);
  }

  /**
   * A DEL in one range. The block holding the key may be taken as last seen (its release writes at
   * that version); when that write meets a changed pool that no longer holds the key (released and
   * placed again elsewhere by another writer), the node's blocks are searched afresh.
   */
  async function releaseIn(network: string, range: Range, key: AttachmentKey): Promise<Released[]> {
    for (const recall of [true, false]) {
      const { handoff, ipam } = callScope();
      const blocks = await holding(network, range, key, handoff, recall);
      if (blocks.length === 0) return [];
      const released = await ipam.release({ network, ranges: blocks, key });
      if (released.length > 0) return released;
    }
    return [];
  }

  // one process's calls of one key in order: a second ADD of a key while the first is running
  // (a runtime's retry) would choose from reads the first makes stale, where no commit fences them
  const inOrder = keyQueue();
  return {
    conflicts: counter,
    allocate: (input) => inOrder(input.key, () => allocateNow(input)),
    release: (input) => inOrder(input.key, () => releaseNow(input)),
    lookup: (input) => inOrder(input.key, () => lookupNow(input)),
    hasRoom,
    blockPools,
  };

  async function allocateNow(input: AllocateInput): Promise<Assigned[]> {
    if ((input.addresses ?? []).length > 0) {
      throw new InvalidRequestError("requested addresses are not supported with per-node blocks (node_block_size)");
    }
    if (input.ranges.length === 0) throw new InvalidRequestError("no ranges to allocate from");
    const network = input.network ?? "";
    let recall = true;
    for (let attempt = 1; ; attempt++) {
      // a fresh scope per attempt: what an attempt handed on (or fenced) and did not use dies with it
      const { handoff, ipam } = callScope();
      try {
        const blocks: Range[] = [];
        for (const range of input.ranges) blocks.push(await chooseBlock(network, range, input.key, handoff, recall));
        const assigned = await ipam.allocate({ ...input, network, ranges: blocks });
        return assigned.map((a, i) => ({ ...a, range: input.ranges[i] as Range }));
      } catch (error) {
        // A block filled up after it was read (another call on this node), or a fenced choice
        // rested on a pool that changed: choose again — after a broken fence, from fresh reads.
        const replan = error instanceof RangeExhaustedError || error instanceof FenceBrokenError;
        if (!replan || attempt >= MAX_REPLANS)
          throw error instanceof FenceBrokenError
            ? new StoreConflictError(`node blocks of ${input.ranges.map((r) => r.cidr.text).join(", ")}`)
            : error;
        if (error instanceof FenceBrokenError) {
          counter.conflicts += 1;
          recall = false;
        }
      }
    }
  }

  async function releaseNow(input: ReleaseInput): Promise<Released[]> {
    const network = input.network ?? "";
    const out: Released[] = [];
    const errors: unknown[] = [];
    for (const range of input.ranges) {
      try {
        out.push(...(await releaseIn(network, range, input.key)));
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw errors[0];
    return out;
  }

  async function lookupNow(input: ReleaseInput): Promise<(Assigned | undefined)[]> {
    const network = input.network ?? "";
    const out: (Assigned | undefined)[] = [];
    for (const range of input.ranges) {
      const { handoff, ipam } = callScope();
      const [block] = await holding(network, range, input.key, handoff);
      const [found] = block === undefined ? [undefined] : await ipam.lookup({ network, ranges: [block], key: input.key });
      out.push(found === undefined ? undefined : { ...found, range });
    }
    return out;
  }

  async function hasRoom(network: string | undefined, range: Range): Promise<boolean> {
    const seen = await view(network ?? "", range);
    // an unclaimed block, as read from the store (never from memory), is room
    if (seen.unclaimed !== undefined) return true;
    for (const block of searched(seen)) {
      const stored = await store.readPool(blockPoolRef(network ?? "", block));
      if (stored === undefined || roomIn(stored.pool, block)) return true;
    }
    return false;
  }

  async function blockPools(network: string | undefined, range: Range): Promise<BlockPool[]> {
    const layout = layoutOf(range);
    const out: BlockPool[] = [];
    for (const ref of await store.listPools()) {
      if (ref.network !== (network ?? "")) continue;
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
}
