import { InvalidRangeError } from "./errors.js";
import { type Cidr, cidrOf, familyBits, ipAt } from "./ip.js";
import type { OffsetInterval, Range } from "./range.js";
import type { ClaimRef, PoolRef } from "./store.js";

/**
 * Per-node blocks (pure part). A range is cut into aligned blocks of `size` addresses; each block is
 * a pool of its own (so a node's ADDs write only its own blocks), and a node takes a block by
 * claiming it — an affinity claim, create-if-absent, so two nodes never take one block. A node
 * visits blocks in its own fixed order (double hashing of its name): it claims the *first* unclaimed
 * block of that order, so the blocks it holds always lie before the first unclaimed one, which
 * bounds every search (DESIGN.md, "Per-node blocks").
 */
export interface BlockLayout {
  readonly range: Range;
  /** Addresses per block (a power of two). */
  readonly size: bigint;
  /** Number of blocks covering the range's CIDR. */
  readonly count: bigint;
  /** Prefix length of one block. */
  readonly prefix: number;
}

/** Validates `size` (a power of two, at least 4, at most half the range's CIDR) against a range. */
export function blockLayout(range: Range, size: number | bigint): BlockLayout {
  const n = BigInt(size);
  const text = String(size);
  if (n < 4n || (n & (n - 1n)) !== 0n) throw new InvalidRangeError("node_block_size", text, "must be a power of two, at least 4");
  if (n * 2n > range.cidr.size) {
    throw new InvalidRangeError("node_block_size", text, `range ${range.cidr.text} must hold at least two blocks of ${text} addresses`);
  }
  const hostBits = n.toString(2).length - 1;
  return Object.freeze({ range, size: n, count: range.cidr.size / n, prefix: familyBits(range.family) - hostBits });
}

/** `blocked` (offsets of a range) within `start+from..start+to`, shifted to offsets from `start`. */
function clipBlocked(blocked: readonly OffsetInterval[], start: bigint, from: bigint, to: bigint): OffsetInterval[] {
  const out: OffsetInterval[] = [];
  for (const b of blocked) {
    if (b.to < start + from || b.from > start + to) continue;
    out.push({ from: (b.from > start + from ? b.from : start + from) - start, to: (b.to < start + to ? b.to : start + to) - start });
  }
  return out;
}

/**
 * A part of `range` as a range of its own (a per-node block, a node slice): its CIDR is `cidr`,
 * whose network is offset `start` of the range; its usable span is the range's clipped to the part's
 * offsets `lo..hi`; blocked offsets clipped and shifted; the gateway stays the range's (for results).
 * Undefined when the part holds no usable address.
 */
export function subRange(range: Range, cidr: Cidr, start: bigint, lo: bigint, hi: bigint): Range | undefined {
  const from = range.first > start + lo ? range.first - start : lo;
  const to = range.last < start + hi ? range.last - start : hi;
  if (from > to) return undefined;
  const blocked = clipBlocked(range.blocked, start, from, to);
  const capacity = to - from + 1n - blocked.reduce((sum, b) => sum + (b.to - b.from + 1n), 0n);
  if (capacity <= 0n) return undefined;
  return Object.freeze({
    cidr,
    family: range.family,
    first: from,
    last: to,
    gateway: range.gateway,
    blocked: Object.freeze(blocked),
    capacity,
    spec: Object.freeze({ range: cidr.text }),
  });
}

/**
 * Block `index` as a range of its own: its CIDR is the block; its usable span and blocked offsets
 * are the parent range's, clipped and shifted; the gateway stays the parent's (for results).
 * Undefined when the block holds no usable address (outside range_start/range_end, excluded).
 */
export function blockRange(layout: BlockLayout, index: bigint): Range | undefined {
  const { range, size } = layout;
  if (index < 0n || index >= layout.count) return undefined;
  const start = index * size;
  return subRange(range, cidrOf(ipAt(range.cidr, start), layout.prefix), start, 0n, size - 1n);
}

/** The index of the block holding `offset` (an offset of the parent range). */
export function blockIndexOf(layout: BlockLayout, offset: bigint): bigint {
  return offset / layout.size;
}

/** 64-bit FNV-1a of a string (UTF-16 code units); the same name gives the same order everywhere. */
function fnv1a(text: string, seed: bigint): bigint {
  let hash = 0xcbf29ce484222325n ^ seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash;
}

/**
 * The node's order of block indexes: start and stride from its name; the stride is odd and the
 * block count a power of two, so the order visits every block exactly once.
 */
export function* nodeBlockOrder(layout: BlockLayout, node: string): Generator<bigint> {
  const start = fnv1a(node, 0n) % layout.count;
  const stride = (fnv1a(node, 0x9e3779b97f4a7c15n) % layout.count) | 1n;
  for (let k = 0n; k < layout.count; k++) yield (start + k * stride) % layout.count;
}

/** The pool of a block: a pool like any other, named by the block's CIDR. */
export function blockPoolRef(network: string, block: Range): PoolRef {
  return { network, cidr: block.cidr.text };
}

/**
 * Where a block's affinity claim lives: in a network of its own (`<network>-node-blocks`, or
 * `node-blocks` for the unnamed network), at the block's first address, so that it never meets
 * the overlapping-range claims of real addresses.
 */
export function affinityClaimRef(network: string, block: Range): ClaimRef {
  return { network: affinityNetworkOf(network), address: formatBlockAddress(block) };
}

/** The network a network's block-affinity claims live in (`<network>-node-blocks`). */
export function affinityNetworkOf(network: string): string {
  return network === "" ? AFFINITY_NETWORK : `${network}-${AFFINITY_NETWORK}`;
}

const AFFINITY_NETWORK = "node-blocks";

/** True for the networks affinity claims live in; a `network_name` must not be one (it is reserved). */
export function isAffinityNetwork(network: string): boolean {
  return network === AFFINITY_NETWORK || network.endsWith(`-${AFFINITY_NETWORK}`);
}

function formatBlockAddress(block: Range): string {
  return block.cidr.text.slice(0, block.cidr.text.indexOf("/"));
}

/** The attachment-key form of a node's affinity: containerId = node name, ifName = "block". */
export const AFFINITY_IF_NAME = "block";
