import {
  blockLayout,
  blockPoolRef,
  blockRange,
  createNodeBlockIpam,
  delegatingStore,
  findFree,
  formatIp,
  type IpamStore,
  ipAt,
  isAssignable,
  nodeBlockOrder,
  parseCidr,
  parseRange,
  type Range,
} from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

const retry = { attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 50 };

/**
 * One attachment's ADD made twice at once by two processes of its node (each its own allocator:
 * no queue shared), one choosing from reads the other made stale: the fences of core's
 * block-commit.ts must send it back to plan again, so the key gets one address.
 */
export function registerSameKeyCases(ctx: SuiteContext): void {
  it("per-node blocks: two writers ADD one key at once, one choosing from reads the other made stale: one address", async () => {
    await sameKeyAtOnce(ctx.store());
  });

  it("per-node blocks: two writers ADD one key at once while the node borrows in a range of 16 blocks: one address", async () => {
    await sameKeyBorrowing(ctx.store());
  });
}

/** Every reservation of `range`'s block pools, straight from the store: [key, address]. */
async function holdings(store: IpamStore, prefix: string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const ref of (await store.listPools()).filter((p) => p.cidr.startsWith(prefix))) {
    for (const r of (await store.readPool(ref))?.pool ?? []) out.push([r.key.containerId, formatIp(ipAt(parseCidr(ref.cidr), r.offset))]);
  }
  return out;
}

/** A store whose first write after `arm()` waits until `open()`; `reached` resolves when it waits. */
function gatedStore(store: IpamStore) {
  let armed = false;
  let reached: () => void = () => {};
  let open: () => void = () => {};
  const atGate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const wait = async () => {
    if (!armed) return;
    armed = false;
    reached();
    await gate;
  };
  const gated = delegatingStore(store, {
    writePool: async (ref, pool, expected) => {
      await wait();
      return store.writePool(ref, pool, expected);
    },
    writeClaim: async (ref, claim, expected) => {
      await wait();
      return store.writeClaim(ref, claim, expected);
    },
    commit: async (writes) => {
      await wait();
      return store.commit(writes);
    },
  });
  const arm = () => {
    armed = true;
  };
  return { gated, arm, atGate, open: () => open() };
}

/**
 * Writer A of a node chooses the node's first block (one address free; the next block unclaimed)
 * and waits before its first write. Meanwhile the last address is taken, writer B of the same
 * node (another process: no queue shared with A) finds the block full, claims the next and places
 * the key there, and the address is freed. A's write alone would succeed: only the fence on the
 * unclaimed block its choice rested on sends it back to plan again, and it answers B's address.
 */
async function sameKeyAtOnce(store: IpamStore): Promise<void> {
  const range = parseRange({ range: "10.62.0.0/28" });
  const layout = blockLayout(range, 4);
  const node = "node-a";
  const { gated, arm, atGate, open } = gatedStore(store);
  const [a, b, c] = [gated, store, store].map((s) => createNodeBlockIpam({ store: s, node, blockSize: 4, retry }));
  const first = blockRange(layout, nodeBlockOrder(layout, node).next().value as bigint) as Range;
  let room = 0;
  for (let o = first.first; o <= first.last; o++) if (isAssignable(first, o)) room += 1;
  for (let i = 0; i < room - 1; i++) await c?.allocate({ ranges: [range], key: key(`f${i}`) });
  arm();
  const fromA = a?.allocate({ ranges: [range], key: key("k") });
  await atGate;
  await c?.allocate({ ranges: [range], key: key("x") });
  const [fromB] = (await b?.allocate({ ranges: [range], key: key("k") })) ?? [];
  await c?.release({ ranges: [range], key: key("x") });
  open();
  const [answer] = (await fromA) ?? [];
  expect(answer && formatIp(answer.address)).toBe(fromB && formatIp(fromB.address));
  await expectOneAddress(store, "10.62.");
}

/** `k` held once; no address twice; every address claim of `prefix` names a reservation (nothing left behind). */
async function expectOneAddress(store: IpamStore, prefix: string): Promise<void> {
  const held = await holdings(store, prefix);
  expect(
    held.filter(([id]) => id === "k"),
    JSON.stringify(held),
  ).toHaveLength(1);
  expect(new Set(held.map(([, address]) => address)).size).toBe(held.length);
  // nothing left behind: every address claim names a reservation
  const claims = (await store.listClaims([""])).filter((ref) => ref.address.startsWith(prefix));
  expect(claims.length, JSON.stringify([claims, held])).toBe(held.length);
}

/** A whole-pool write of `id` into `block`'s first free address (a Whereabouts-style writer), or of its removal. */
async function writeDirect(store: IpamStore, block: Range, id: string, add: boolean): Promise<void> {
  const ref = blockPoolRef("", block);
  const stored = await store.readPool(ref);
  if (stored === undefined) throw new Error(`no pool ${ref.cidr}`);
  const free = findFree(stored.pool, block, block.first, block.last);
  if (add && free === undefined) throw new Error(`no free address in ${ref.cidr}`);
  const pool = add ? stored.pool.with({ offset: free as bigint, key: key(id) }) : stored.pool.without(key(id));
  await store.writePool(ref, pool, stored.version);
}

/**
 * Every block of a 16-block range claimed and full but for one address in each of the 2nd and 3rd
 * blocks of node-a's order: node-a borrows, and its ADD relies on all 16 blocks (past what one
 * transaction fences). Writer A chooses the 2nd and waits before its first write; meanwhile that
 * address is taken, writer B of the same key finds the 2nd full and places the key in the 3rd,
 * and the address is freed again. A must see its choice broken, not write the key a second time.
 */
async function sameKeyBorrowing(store: IpamStore): Promise<void> {
  const range = parseRange({ range: "10.63.0.0/26" });
  const layout = blockLayout(range, 4);
  const order = [...nodeBlockOrder(layout, "node-a")].map((i) => blockRange(layout, i) as Range);
  const [own, o1, o2] = order as [Range, Range, Range];
  const { gated, arm, atGate, open } = gatedStore(store);
  const [a, b] = [gated, store].map((s) => createNodeBlockIpam({ store: s, node: "node-a", blockSize: 4, retry }));
  const other = createNodeBlockIpam({ store, node: "node-b", blockSize: 4, retry });
  let room = 0;
  for (let o = own.first; o <= own.last; o++) if (isAssignable(own, o)) room += 1;
  for (let i = 0; i < room; i++) await b?.allocate({ ranges: [range], key: key(`a${i}`) });
  for (let i = 0; ; i++) {
    const [got] = await other.allocate({ ranges: [range], key: key(`b${i}`) }).catch(() => [undefined]);
    if (got === undefined) break;
  }
  // one address free in o1 and in o2: node-b's entries there released by exact key
  for (const block of [o1, o2]) {
    const stored = await store.readPool(blockPoolRef("", block));
    const [first] = stored?.pool ?? [];
    if (first === undefined) throw new Error(`no entry in ${block.cidr.text}`);
    await other.release({ ranges: [range], key: first.key });
  }
  arm();
  const fromA = a?.allocate({ ranges: [range], key: key("k") });
  await atGate;
  await writeDirect(store, o1, "y", true);
  const [fromB] = (await b?.allocate({ ranges: [range], key: key("k") })) ?? [];
  expect(fromB?.pool.cidr).toBe(o2.cidr.text);
  await writeDirect(store, o1, "y", false);
  open();
  const [answer] = (await fromA) ?? [];
  expect(answer && formatIp(answer.address)).toBe(formatIp(fromB?.address ?? { family: 4, value: 0n }));
  await expectOneAddress(store, "10.63.");
}
