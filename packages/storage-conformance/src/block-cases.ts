import {
  affinityClaimRef,
  blockLayout,
  blockRange,
  createNodeBlockIpam,
  delegatingStore,
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

/** The node holding the affinity claim of the block pool `cidr` (read from the store). */
async function ownerOf(store: IpamStore, range: Range, size: number, cidr: string): Promise<string | undefined> {
  const layout = blockLayout(range, size);
  const block = blockRange(layout, (parseCidr(cidr).network - range.cidr.network) / BigInt(size));
  return block === undefined ? undefined : (await store.readClaim(affinityClaimRef("", block)))?.claim.key.containerId;
}

/** Runs `each` ADDs on each of `nodes` concurrent nodes; returns the addresses per key. */
async function addOnNodes(store: IpamStore, range: Range, size: number, nodes: number, each: number): Promise<Map<string, string>> {
  const got = new Map<string, string>();
  await Promise.all(
    Array.from({ length: nodes }, async (_, n) => {
      const ipam = createNodeBlockIpam({ store, node: `node-${n}`, blockSize: size, retry });
      for (let i = 0; i < each; i++) {
        const [a] = await ipam.allocate({ ranges: [range], key: key(`n${n}-p${i}`) });
        if (a !== undefined) got.set(`n${n}-p${i}`, formatIp(a.address));
      }
    }),
  );
  return got;
}

export function registerBlockCases(ctx: SuiteContext): void {
  it("per-node blocks: concurrent nodes write only blocks they claimed; all distinct; released by exact key", async () => {
    const s = ctx.store();
    const range = parseRange({ range: "10.60.0.0/24" });
    const got = await addOnNodes(s, range, 16, 4, 10);
    expect(new Set(got.values()).size).toBe(40);
    const pools = (await s.listPools()).filter((p) => p.cidr.startsWith("10.60."));
    for (const ref of pools) {
      const owner = await ownerOf(s, range, 16, ref.cidr);
      for (const r of (await s.readPool(ref))?.pool ?? []) expect(r.key.containerId.startsWith(`n${owner?.slice(5)}-`)).toBe(true);
    }
    for (let n = 0; n < 4; n++) {
      const ipam = createNodeBlockIpam({ store: s, node: `node-${n}`, blockSize: 16, retry });
      for (let i = 0; i < 10; i++) expect(await ipam.release({ ranges: [range], key: key(`n${n}-p${i}`) })).toHaveLength(1);
    }
    for (const ref of pools) expect((await s.readPool(ref))?.pool.size).toBe(0);
  });

  it("per-node blocks: nodes racing for the last blocks and borrowing never hold an address twice; every key is found", async () => {
    const s = ctx.store();
    const range = parseRange({ range: "10.61.0.0/27" }); // 4 blocks of 8, 30 usable addresses
    const got = await addOnNodes(s, range, 8, 3, 9);
    expect(got.size).toBe(27);
    expect(new Set(got.values()).size).toBe(27);
    for (let n = 0; n < 3; n++) {
      const ipam = createNodeBlockIpam({ store: s, node: `node-${n}`, blockSize: 8, retry });
      for (let i = 0; i < 9; i++) {
        const [found] = await ipam.lookup({ ranges: [range], key: key(`n${n}-p${i}`) });
        expect(found === undefined ? undefined : formatIp(found.address)).toBe(got.get(`n${n}-p${i}`));
      }
    }
  });

  it("per-node blocks: two writers ADD one key at once, one choosing from reads the other made stale: one address", async () => {
    await sameKeyAtOnce(ctx.store());
  });
}

/** Every reservation of `range`'s block pools, straight from the store: [key, address]. */
async function holdings(store: IpamStore): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const ref of (await store.listPools()).filter((p) => p.cidr.startsWith("10.62."))) {
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
  const held = await holdings(store);
  expect(
    held.filter(([id]) => id === "k"),
    JSON.stringify(held),
  ).toHaveLength(1);
  expect(new Set(held.map(([, address]) => address)).size).toBe(held.length);
  // nothing left behind: every address claim names a reservation
  const claims = (await store.listClaims([""])).filter((ref) => ref.address.startsWith("10.62."));
  expect(claims.length, JSON.stringify([claims, held])).toBe(held.length);
}
