/**
 * The protocol model's world (model/ipam.pml) in the code's terms: its four addresses, two blocks
 * and plain pool as real ranges, its keys and nodes, its initial stores, and the store written
 * as the model prints it ("MSC: S ..."). Test helper of the trace link (not part of the package's API).
 */
import { parseCidr, parseIp } from "./ip.js";
import { type AttachmentKey, attachmentKey } from "./key.js";
import { AFFINITY_IF_NAME, affinityClaimRef, blockLayout, blockPoolRef, blockRange, isAffinityNetwork } from "./node-blocks.js";
import { Pool } from "./pool.js";
import { parseRange, type Range } from "./range.js";
import type { Claim, ClaimRef, IpamStore, PoolRef } from "./store.js";

/** Per-node blocks of 4 over 10.0.0.0/29: block 0 holds a0 (.1) and a1 (.2), block 1 a2 (.4) and a3 (.5). */
export const BLOCK_RANGE = parseRange({ range: "10.0.0.0/29", exclude: ["10.0.0.3/32", "10.0.0.6/32"] });
export const BLOCK_SIZE = 4;
/** Pool 3, the plain range over a0..a2 (its CIDR, a /29, holds all four). */
export const PLAIN_RANGE = parseRange({ range: "10.0.0.0/29", range_end: "10.0.0.4", exclude: ["10.0.0.3/32"] });

const layout = blockLayout(BLOCK_RANGE, BLOCK_SIZE);
export const BLOCKS: Range[] = [0n, 1n].map((i) => blockRange(layout, i) as Range);

/** The model's pools 1..3. */
export const POOLS: Record<number, PoolRef> = {
  1: blockPoolRef("", BLOCKS[0] as Range),
  2: blockPoolRef("", BLOCKS[1] as Range),
  3: { network: "", cidr: PLAIN_RANGE.cidr.text },
};
export const ADDRESSES = ["10.0.0.1", "10.0.0.2", "10.0.0.4", "10.0.0.5"];
/** The addresses of each pool's range, in order (the model's PFIRST..PLAST). */
export const POOL_ADDRESSES: Record<number, number[]> = { 1: [0, 1], 2: [2, 3], 3: [0, 1, 2] };

/** Nodes 1, 2, 3 by name: n1 visits block 0 first, n2 block 1 first (nodeBlockOrder), as the model's ORD. */
export const nodeName = (n: number) => `n${n}`;
export const keyOf = (k: number): AttachmentKey => attachmentKey({ containerId: `c${k}`, ifName: "net1" });
export const podRefOf = (name: number) => `ns/p${name}`;
export const uidOf = (k: number) => `u${k}`;

export function poolNumber(ref: PoolRef): number {
  const found = Object.entries(POOLS).find(([, p]) => p.network === ref.network && p.cidr === ref.cidr);
  if (found === undefined) throw new Error(`not a pool of the model: ${ref.network}/${ref.cidr}`);
  return Number(found[0]);
}

export function addressNumber(address: string): number {
  const i = ADDRESSES.indexOf(address);
  if (i < 0) throw new Error(`not an address of the model: ${address}`);
  return i;
}

/** A block's affinity claim: its block number. */
export function blockNumber(ref: ClaimRef): number {
  const i = BLOCKS.findIndex((b) => affinityClaimRef("", b).address === ref.address);
  if (i < 0 || !isAffinityNetwork(ref.network)) throw new Error(`not an affinity claim of the model: ${ref.network}/${ref.address}`);
  return i;
}

export function keyNumber(key: AttachmentKey): number {
  const match = /^c(\d)$/.exec(key.containerId);
  if (match === null || key.ifName !== "net1") throw new Error(`not a key of the model: ${key.containerId}/${key.ifName}`);
  return Number(match[1]);
}

const nodeNumber = (claim: Claim) => Number(claim.key.containerId.slice(1));

export function offsetIn(pool: number, address: number): bigint {
  return parseIp(ADDRESSES[address] as string).value - parseCidr((POOLS[pool] as PoolRef).cidr).network;
}

export function addressAt(pool: number, offset: bigint): number {
  const base = parseCidr((POOLS[pool] as PoolRef).cidr).network;
  return ADDRESSES.findIndex((a) => parseIp(a).value === base + offset);
}

/** The model's configuration: which actors, and how they start (the model's init). */
export interface Setup {
  /** The model's four configurations; "sticky" (not in the model): two direct writers of the plain pool, on a sticky network. */
  mode: "two-nodes" | "same-node" | "overlap" | "same-key" | "sticky";
  alone: boolean;
  /** Pod names by key (REBORN: key 2 named as key 1). */
  podOf: Record<number, number>;
}

export interface Actor {
  /** 1, 2: allocators; 3: the reconciler. */
  id: number;
  key: number;
  /** The node (0: the plain pool's direct writer). */
  node: number;
}

export function actorsOf(setup: Setup): Actor[] {
  const second: Record<Setup["mode"], Actor> = {
    "two-nodes": { id: 2, key: 2, node: 2 },
    "same-node": { id: 2, key: 2, node: 1 },
    overlap: { id: 2, key: 2, node: 0 },
    "same-key": { id: 2, key: 1, node: 1 },
    sticky: { id: 2, key: 2, node: 0 },
  };
  const first: Actor = { id: 1, key: 1, node: setup.mode === "sticky" ? 0 : 1 };
  return setup.alone ? [first] : [first, second[setup.mode]];
}

const CREATED = "2026-01-01T00:00:00.000Z";

function entry(pool: number, address: number, key: number, podOf: Record<number, number>) {
  return { offset: offsetIn(pool, address), key: keyOf(key), podRef: podRefOf(podOf[key] ?? key), podUid: uidOf(key), createdAt: CREATED };
}

async function claim(store: IpamStore, address: number, pool: number, key: number, podOf: Record<number, number>): Promise<void> {
  const claimed: Claim = { pool: POOLS[pool] as PoolRef, key: keyOf(key), podRef: podRefOf(podOf[key] ?? key) };
  await store.writeClaim({ network: "", address: ADDRESSES[address] as string }, claimed, undefined);
}

async function affinity(store: IpamStore, block: number, node: number): Promise<void> {
  const b = BLOCKS[block] as Range;
  await store.writeClaim(
    affinityClaimRef("", b),
    { pool: blockPoolRef("", b), key: attachmentKey({ containerId: nodeName(node), ifName: AFFINITY_IF_NAME }) },
    undefined,
  );
}

/** The model's initial stores. Keys whose pods exist from the start: returned (SAME_KEY: keys 1 and 2). */
export async function seed(store: IpamStore, setup: Setup): Promise<{ alive: number[]; answered: [number, number, number][] }> {
  const pool = (n: number, entries: ReturnType<typeof entry>[]) =>
    store.writePool(POOLS[n] as PoolRef, Pool.fromReservations(parseCidr((POOLS[n] as PoolRef).cidr), entries), undefined);
  if (setup.mode === "same-key") {
    // node 1 owns block 0, full with a dead sandbox's entry (key 3) and a live attachment's (key 2); block 1 unclaimed
    await affinity(store, 0, 1);
    await pool(1, [entry(1, 0, 3, setup.podOf), entry(1, 1, 2, setup.podOf)]);
    await claim(store, 0, 1, 3, setup.podOf);
    await claim(store, 1, 1, 2, setup.podOf);
    return { alive: [1, 2], answered: [[2, 1, 1]] };
  }
  // node 3 died: block 1 is its, and it held a2 for key 3, with its claim
  await affinity(store, 1, 3);
  await pool(2, [entry(2, 2, 3, setup.podOf)]);
  await claim(store, 2, 2, 3, setup.podOf);
  return { alive: [], answered: [] };
}

/** The stores as the model prints them after a write: `e h h e h h e h h h | p k p k p k p k | n n`. */
export async function stateLine(store: IpamStore): Promise<string> {
  const out: number[] = [];
  for (const n of [1, 2, 3]) {
    const stored = await store.readPool(POOLS[n] as PoolRef);
    out.push(stored === undefined ? 0 : 1);
    for (const a of POOL_ADDRESSES[n] as number[]) {
      const held = stored?.pool.atOffset(offsetIn(n, a));
      out.push(held === undefined ? 0 : keyNumber(held.key));
    }
  }
  const claims: number[] = [];
  for (const address of ADDRESSES) {
    const c = (await store.readClaim({ network: "", address }))?.claim;
    claims.push(c === undefined ? 0 : poolNumber(c.pool), c === undefined ? 0 : keyNumber(c.key));
  }
  const nodes: number[] = [];
  for (const b of BLOCKS) {
    const c = (await store.readClaim(affinityClaimRef("", b)))?.claim;
    nodes.push(c === undefined ? 0 : nodeNumber(c));
  }
  return `${out.join(" ")} | ${claims.join(" ")} | ${nodes.join(" ")}`;
}
