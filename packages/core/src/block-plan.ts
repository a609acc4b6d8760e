import { findFree } from "./allocator.js";
import type { AttachmentKey } from "./key.js";
import type { Pool } from "./pool.js";
import type { Range } from "./range.js";
import type { StoredPool, Version } from "./store.js";

/**
 * Per-node blocks, the planner: pure decisions from what a call has seen. No IO — the executor
 * (block-ipam.ts) reads what a plan asks for and calls the planner again, then commits what it
 * decides at the versions it used, with the fences it names (DESIGN.md, "Per-node blocks").
 */

/** A block pool as the call knows it: read from the store in this call (`fresh`), or recalled (the PoolCache). */
export interface Known {
  readonly stored: StoredPool | undefined;
  readonly fresh: boolean;
}

/** What the node sees along its block order (block-view.ts). */
export interface NodeView {
  /** This node's blocks, in its order. */
  readonly own: readonly Range[];
  /** The first unclaimed block of the order; undefined when every block is claimed. */
  readonly unclaimed: Range | undefined;
  /** Other nodes' blocks — only collected when no block is unclaimed (then this node may borrow). */
  readonly others: readonly Range[];
}

/**
 * What the commit must find unchanged: this block's pool still at `expected` (undefined: still
 * absent). `unclaimed`: the first unclaimed block of the node's order — on a store without
 * entry-level commits its affinity claim is checked still absent instead (block-commit.ts).
 */
export interface Fence {
  readonly block: Range;
  readonly expected: Version | undefined;
  readonly unclaimed?: true;
}

export type AddPlan =
  /** Read this block afresh, then plan again. */
  | { readonly kind: "read"; readonly block: Range }
  /** The key is in this block: the ADD answers it and writes nothing. */
  | { readonly kind: "held"; readonly block: Range }
  /** Allocate in this block (its pool handed on as known), committing with these fences. */
  | { readonly kind: "write"; readonly block: Range; readonly fences: readonly Fence[] }
  /**
   * Claim this unclaimed block, then plan again: with it claimed, the blocks the choice rests on
   * (the next unclaimed one among them) are only known from a fresh view.
   */
  | { readonly kind: "claim"; readonly block: Range }
  /** No room in any searched block and none unclaimed. */
  | { readonly kind: "full" };

export interface AddPlanInput {
  readonly view: NodeView;
  /** What the call knows of each searched block (fresh reads, and recalls when it may recall). */
  readonly known: ReadonlyMap<Range, Known>;
  readonly key: AttachmentKey;
}

/**
 * Fences at most in one transaction (entry-level commits): a node holds one or two blocks per
 * network, and each fence is one more compare (a transaction holds a bounded number of
 * operations). Past it — a node that borrows searches everyone's blocks — the fences are touches
 * (block-commit.ts), and an ADD reads every block rather than choose from recalls.
 */
export const MAX_FENCED_BLOCKS = 8;

/** Whether `pool` has a free address in `block`. */
export const roomIn = (pool: Pool, block: Range): boolean => findFree(pool, block, block.first, block.last) !== undefined;

/** The blocks that may hold this node's reservations: its own; everyone's once none is unclaimed. */
export const searched = (view: NodeView): readonly Range[] => (view.unclaimed === undefined ? [...view.own, ...view.others] : view.own);

const holds = (known: Known | undefined, key: AttachmentKey) => known?.stored?.pool.forKey(key) !== undefined;
const hasRoom = (known: Known | undefined, block: Range) =>
  known !== undefined && (known.stored === undefined || roomIn(known.stored.pool, block));

/**
 * The one rule of the executor, planned here: a commit compares every block the choice of
 * `chosen` rested on — each other searched block at the version it was known at, and the first
 * unclaimed block's pool as absent — so "the key is in none of them" holds at the commit, whoever
 * else writes. A node that borrows relies on every block of the range: all are fenced (past
 * MAX_FENCED_BLOCKS by touches, block-commit.ts).
 */
export function fencesFor(input: AddPlanInput, chosen: Range): Fence[] {
  const relied = searched(input.view).filter((block) => block !== chosen);
  const fences: Fence[] = relied.map((block) => ({ block, expected: input.known.get(block)?.stored?.version }));
  const { unclaimed } = input.view;
  if (unclaimed !== undefined && unclaimed !== chosen) fences.push({ block: unclaimed, expected: undefined, unclaimed: true });
  return fences;
}

/**
 * From recalls alone, when every searched block is recalled and none holds the key: the first with
 * room. With one searched block "not held" is a fact about that pool, checked by the commit at its
 * recalled version; with several (up to MAX_FENCED_BLOCKS), by the fences on the others.
 */
function fromRecalls(input: AddPlanInput, blocks: readonly Range[]): Range | undefined {
  if (blocks.length === 0) return undefined;
  if (blocks.length > MAX_FENCED_BLOCKS) return undefined;
  for (const block of blocks) {
    const known = input.known.get(block);
    if (known === undefined || known.fresh || known.stored === undefined || holds(known, input.key)) return undefined;
  }
  return blocks.find((block) => hasRoom(input.known.get(block), block));
}

/**
 * Over several searched blocks, the one that may stay recalled: the last whose recall has room
 * and does not hold the key (a node fills its blocks in order, so its newest block is the one it
 * writes and its recall the freshest). Every other block is read afresh; should an earlier one
 * have room after all, this one is read too — a recall is only trusted for the block written.
 */
function spared(input: AddPlanInput, blocks: readonly Range[]): Range | undefined {
  if (blocks.length < 2) return undefined;
  for (const block of [...blocks].reverse()) {
    const known = input.known.get(block);
    if (known?.stored !== undefined && !holds(known, input.key) && hasRoom(known, block)) return block;
  }
  return undefined;
}

/**
 * The next step of an ADD in one range: the block its key is in, else a block with room, else the
 * first unclaimed block to claim — or the block to read before deciding. Blocks are read one by
 * one in the node's order, so an ADD whose key is in an early block stops there.
 */
export function planAdd(input: AddPlanInput): AddPlan {
  const blocks = searched(input.view);
  const quick = fromRecalls(input, blocks);
  if (quick !== undefined) return { kind: "write", block: quick, fences: fencesFor(input, quick) };
  const kept = spared(input, blocks);
  for (const block of blocks) {
    const known = input.known.get(block);
    if (block !== kept && !known?.fresh) return { kind: "read", block };
    if (known?.fresh && holds(known, input.key)) return { kind: "held", block };
  }
  const room = blocks.find((block) => hasRoom(input.known.get(block), block));
  // another block is written: "not held" in the kept one must then be read, not recalled (read,
  // the loop above answers "held" if it is there)
  if (kept !== undefined && room !== kept && !input.known.get(kept)?.fresh) return { kind: "read", block: kept };
  if (room !== undefined) return { kind: "write", block: room, fences: fencesFor(input, room) };
  if (input.view.unclaimed === undefined) return { kind: "full" };
  return { kind: "claim", block: input.view.unclaimed };
}

/**
 * The searched block whose recalled pool holds `key`, if any: a DEL may take it as last seen (its
 * release writes at that version, and a key is held in one block at most). "Not held" is never
 * taken from a recall: a release that finds nothing writes nothing that could fail.
 */
export function recalledHolder(
  blocks: readonly Range[],
  recall: (block: Range) => StoredPool | undefined,
  key: AttachmentKey,
): Range | undefined {
  return blocks.find((block) => recall(block)?.pool.forKey(key) !== undefined);
}
