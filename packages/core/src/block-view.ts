import type { NodeView } from "./block-plan.js";
import { readClaimsOf } from "./claims.js";
import { affinityClaimRef, type BlockLayout, blockRange, nodeBlockOrder } from "./node-blocks.js";
import type { Range } from "./range.js";
import type { ClaimRef, IpamStore, StoredClaim } from "./store.js";

/** Affinity claims read in the first request of a walk along the node's order, where the store reads several at once. */
const READ_AHEAD = 8;
/** At most this many in one request (a store may split more into several requests anyway). */
const READ_AHEAD_MAX = 64;

/** The next block along a node's order (skipping positions outside the range), or undefined at its end. */
function nextBlock(layout: BlockLayout, order: Generator<bigint>): Range | undefined {
  for (let step = order.next(); !step.done; step = order.next()) {
    const block = blockRange(layout, step.value);
    if (block !== undefined) return block;
  }
  return undefined;
}

/**
 * The node's blocks along its order, up to the first unclaimed one. A claim seen may come from
 * memory (withAffinityCache: claims are never deleted), "unclaimed" always comes from the store:
 * the blocks that may hold this node's keys are exactly those before it. Where the store reads
 * several claims in one request, the claims are read ahead in windows along the order
 * (READ_AHEAD, doubling up to READ_AHEAD_MAX): a node whose next blocks other nodes took walks
 * past them in one request, not one each. Claims read beyond the first unclaimed one are only
 * remembered (withAffinityCache), never used.
 */
export async function readNodeView(store: IpamStore, network: string, layout: BlockLayout, node: string): Promise<NodeView> {
  const own: Range[] = [];
  const others: Range[] = [];
  const order = nodeBlockOrder(layout, node);
  const batches = store.capabilities.batchReads;
  for (let window = batches ? READ_AHEAD : 1; ; window = batches ? Math.min(window * 2, READ_AHEAD_MAX) : 1) {
    const blocks: Range[] = [];
    while (blocks.length < window) {
      const block = nextBlock(layout, order);
      if (block === undefined) break;
      blocks.push(block);
    }
    if (blocks.length === 0) return { own, unclaimed: undefined, others };
    const claims = await readClaimsOf(
      store,
      blocks.map((block) => affinityClaimRef(network, block)),
    );
    for (const [i, block] of blocks.entries()) {
      const stored = claims[i];
      if (stored === undefined) return { own, unclaimed: block, others: [] };
      (stored.claim.key.containerId === node ? own : others).push(block);
    }
  }
}

/**
 * The node's view as this process remembers it, without a request: its blocks along its order
 * from the affinity claims it has seen (claims are never deleted, so a claim seen stays true), up
 * to the first block whose claim it has not seen, taken as the first unclaimed one. That last part
 * is only a guess: a choice made from this view is committed with the first unclaimed block's
 * affinity claim checked afresh just before the write that places the key (the fence of a
 * whole-pool store, block-commit.ts), which fails if the guess is wrong — if it holds there, the
 * node's blocks at that moment are exactly the own blocks remembered before it. Undefined when
 * every block is remembered claimed (a node that borrows searches every block: it reads them).
 */
export function recalledNodeView(
  recall: (ref: ClaimRef) => StoredClaim | undefined,
  network: string,
  layout: BlockLayout,
  node: string,
): NodeView | undefined {
  const own: Range[] = [];
  const order = nodeBlockOrder(layout, node);
  for (let block = nextBlock(layout, order); block !== undefined; block = nextBlock(layout, order)) {
    const seen = recall(affinityClaimRef(network, block));
    if (seen === undefined) return { own, unclaimed: block, others: [] };
    if (seen.claim.key.containerId === node) own.push(block);
  }
  return undefined;
}
