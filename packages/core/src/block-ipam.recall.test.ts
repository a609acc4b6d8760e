import { describe, expect, it } from "vitest";
import { countingStore, ETCD_LIKE, holdings, key, ownerOf } from "./block-ipam.fixtures.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { formatIp, parseCidr } from "./ip.js";
import { IpamCache } from "./ipam-cache.js";
import { affinityClaimRef, blockLayout, blockRange } from "./node-blocks.js";
import { parseRange, type Range } from "./range.js";

/** Per-node blocks: which pools a call reads, with and without pool recall, and what a stale read costs. */
describe("per-node blocks", () => {
  const range = parseRange({ range: "10.0.0.0/24", gateway: "10.0.0.1" });

  /** ADDs c0, c1, … until one lands in a second block: the node's two block pools (the first one full). */
  async function fillFirstBlock(ipam: ReturnType<typeof createNodeBlockIpam>): Promise<{ first?: string; second?: string }> {
    const [c0] = await ipam.allocate({ ranges: [range], key: key("c0") });
    const first = c0?.pool.cidr;
    for (let i = 1; i < 64; i++) {
      const [got] = await ipam.allocate({ ranges: [range], key: key(`c${i}`) });
      if (got?.pool.cidr !== first) return { first, second: got?.pool.cidr };
    }
    throw new Error("no second block after 64 ADDs");
  }

  it("reads its block pool once per ADD, DEL and lookup once its block is known (the choice's read is handed on)", async () => {
    const { store, reads } = countingStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    // claims its block, then plans again from a fresh view: reads the block (no pool yet) and writes it
    const [first] = await a.allocate({ ranges: [range], key: key("c0") });
    const block = first?.pool.cidr;
    expect(block).toMatch(/^10\.0\.0\.\d+\/28$/);
    expect(reads).toEqual([block]);
    reads.length = 0;
    const [got] = await a.allocate({ ranges: [range], key: key("c1") });
    expect(reads).toEqual([block]);
    reads.length = 0;
    expect((await a.allocate({ ranges: [range], key: key("c1") }))[0]?.address).toEqual(got?.address);
    expect(reads).toEqual([block]);
    reads.length = 0;
    expect((await a.lookup({ ranges: [range], key: key("c1") }))[0]?.address).toEqual(got?.address);
    expect(reads).toEqual([block]);
    reads.length = 0;
    expect((await a.release({ ranges: [range], key: key("c1") })).map((r) => r.address)).toEqual([got?.address]);
    expect(reads).toEqual([block]);
  });

  it("a read handed on stale costs a conflict and a fresh read, never an address held twice", async () => {
    let race: (() => Promise<void>) | undefined;
    const { inner, store } = countingStore(async () => {
      const run = race;
      race = undefined;
      await run?.();
    });
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    await a.allocate({ ranges: [range], key: key("c0") });
    // another process of the same node (the binary while the agent restarts) writes the block between
    // node-a's read and its write
    const other = createNodeBlockIpam({ store: inner, node: "node-a", blockSize: 16 });
    race = async () => {
      await other.allocate({ ranges: [range], key: key("o1") });
    };
    const before = a.conflicts.conflicts;
    await a.allocate({ ranges: [range], key: key("c1") });
    expect(a.conflicts.conflicts).toBe(before + 1);
    const held = await holdings(inner);
    expect(held.map((h) => h.key).sort()).toEqual(["c0/net1", "c1/net1", "o1/net1"]);
    expect(new Set(held.map((h) => h.address)).size).toBe(3);
  });

  it("with pool recall, ADD and DEL in the node's only block read no pool; a lookup and an idempotent ADD still read", async () => {
    const { store, reads } = countingStore();
    const a = createNodeBlockIpam({ store, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    // the ADD that claims the block reads it once (nothing recalled yet); the next ones read nothing
    const [first] = await a.allocate({ ranges: [range], key: key("c0") });
    const block = first?.pool.cidr;
    expect(reads).toEqual([block]);
    reads.length = 0;
    const [got] = await a.allocate({ ranges: [range], key: key("c1") });
    expect(reads).toEqual([]);
    // an ADD that finds its key writes nothing, so it never trusts a recalled pool
    expect((await a.allocate({ ranges: [range], key: key("c1") }))[0]?.address).toEqual(got?.address);
    expect(reads).toEqual([block]);
    reads.length = 0;
    expect((await a.lookup({ ranges: [range], key: key("c1") }))[0]?.address).toEqual(got?.address);
    expect(reads).toEqual([block]);
    reads.length = 0;
    expect((await a.release({ ranges: [range], key: key("c1") })).map((r) => r.address)).toEqual([got?.address]);
    expect(reads).toEqual([]);
    // a DEL that finds nothing as recalled writes nothing, so it reads afresh
    expect(await a.release({ ranges: [range], key: key("c1") })).toEqual([]);
    expect(reads).toEqual([block]);
  });

  it("a stale recalled pool costs a conflict and a fresh read: no address held twice, no release missed, no released address handed back", async () => {
    const { inner, store } = countingStore();
    const a = createNodeBlockIpam({ store, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    // another process of the same node (the binary while the agent restarts), and the reconciler
    const other = createNodeBlockIpam({ store: inner, node: "node-a", blockSize: 16 });
    const [c0] = await a.allocate({ ranges: [range], key: key("c0") });
    await other.allocate({ ranges: [range], key: key("o1") });
    const before = a.conflicts.conflicts;
    await a.allocate({ ranges: [range], key: key("c1") });
    expect(a.conflicts.conflicts).toBe(before + 1);
    // the other process adds a key this one never saw: a's DEL of it reads afresh and frees it
    await other.allocate({ ranges: [range], key: key("o2") });
    expect((await a.release({ ranges: [range], key: key("o2") })).map((r) => r.reservation.key)).toEqual([key("o2")]);
    // c0 released behind a's back: a's ADD of c0 must reserve again, not answer the recalled address
    await other.release({ ranges: [range], key: key("c0") });
    const [again] = await a.allocate({ ranges: [range], key: key("c0") });
    const held = await holdings(inner);
    expect(held.map((h) => h.key).sort()).toEqual(["c0/net1", "c1/net1", "o1/net1"]);
    expect(new Set(held.map((h) => h.address)).size).toBe(3);
    expect(held.find((h) => h.key === "c0/net1")?.address).toBe(again && formatIp(again.address));
    expect(c0).toBeDefined();
  });

  it("with pool recall and two blocks, a DEL of a key held in either, as last seen, reads no pool; a stale one costs a conflict and a fresh read", async () => {
    const { inner, store, reads } = countingStore();
    const a = createNodeBlockIpam({ store, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    const reconciler = createNodeBlockIpam({ store: inner, node: "node-a", blockSize: 16 });
    for (let i = 0; i < 20; i++) await a.allocate({ ranges: [range], key: key(`c${i}`) });
    const poolOf = async (id: string) => (await holdings(inner)).find((h) => h.key === `${id}/net1`)?.pool;
    const [first, second] = [await poolOf("c0"), await poolOf("c19")];
    expect(first).toBeDefined();
    expect(second).not.toBe(first);
    reads.length = 0;
    for (const id of ["c0", "c19"]) expect(await a.release({ ranges: [range], key: key(id) })).toHaveLength(1);
    expect(reads).toEqual([]);
    // released behind its back: the first block's recall is stale, its write conflicts, a fresh read follows
    await reconciler.release({ ranges: [range], key: key("c1") });
    const before = a.conflicts.conflicts;
    expect((await a.release({ ranges: [range], key: key("c2") })).map((r) => r.reservation.key)).toEqual([key("c2")]);
    expect(a.conflicts.conflicts).toBe(before + 1);
    expect(reads).toContain(first);
    const held = (await holdings(inner)).map((h) => h.key).sort();
    expect(held).toEqual(Array.from({ length: 16 }, (_, i) => `c${i + 3}/net1`).sort());
  });

  it("with pool recall and two blocks, whole-pool writes: an ADD reads no pool (the full block touched at its recalled version); a key placed behind the recall in either is found, not given a second address", async () => {
    const { inner, store, reads } = countingStore();
    const a = createNodeBlockIpam({ store, cache: new IpamCache(), node: "node-a", blockSize: 16 });
    // another process of the same node (the binary while the agent restarts)
    const other = createNodeBlockIpam({ store: inner, node: "node-a", blockSize: 16 });
    const poolOf = async (id: string) => (await holdings(inner)).find((h) => h.key === `${id}/net1`)?.pool;
    const { first, second } = await fillFirstBlock(a);
    reads.length = 0;
    await a.allocate({ ranges: [range], key: key("n1") });
    expect(reads).toEqual([]);
    expect(await poolOf("n1")).toBe(second);

    // placed in the first block behind a's recall: found by the fresh read of that block
    await other.release({ ranges: [range], key: key("c1") });
    const [k] = await other.allocate({ ranges: [range], key: key("k") });
    expect(k?.pool.cidr).toBe(first);
    expect((await a.allocate({ ranges: [range], key: key("k") }))[0]?.address).toEqual(k?.address);
    // placed in the second: a's write at the recalled version conflicts, the fresh read finds it
    const [m] = await other.allocate({ ranges: [range], key: key("m") });
    expect(m?.pool.cidr).toBe(second);
    const before = a.conflicts.conflicts;
    expect((await a.allocate({ ranges: [range], key: key("m") }))[0]?.address).toEqual(m?.address);
    expect(a.conflicts.conflicts).toBe(before + 1);
    // placed in the second behind the recall while the first gains room behind a's back: the first
    // is written, so the second is read afresh before — and holds the key
    const [z] = await other.allocate({ ranges: [range], key: key("z") });
    expect(z?.pool.cidr).toBe(second);
    await other.release({ ranges: [range], key: key("c2") });
    expect((await a.allocate({ ranges: [range], key: key("z") }))[0]?.address).toEqual(z?.address);

    const held = await holdings(inner);
    expect(held.filter((h) => ["k/net1", "m/net1", "z/net1"].includes(h.key))).toHaveLength(3);
    expect(new Set(held.map((h) => h.address)).size).toBe(held.length);
    expect(new Set(held.map((h) => h.key)).size).toBe(held.length);
  });

  it.each([
    ["whole-pool writes", {}],
    ["entry-level commits", ETCD_LIKE],
  ])(
    "a block claimed over a pool left behind (%s): read after the claim, its entries kept, nothing held twice",
    async (_label, options) => {
      const two = parseRange({ range: "10.0.0.0/27" }); // two blocks of 16
      const { inner, store, reads } = countingStore(undefined, options);
      const b = createNodeBlockIpam({ store: inner, node: "node-b", blockSize: 16 });
      const c = createNodeBlockIpam({ store: inner, node: "node-c", blockSize: 16 });
      const [held] = await b.allocate({ ranges: [two], key: key("b0") });
      await c.allocate({ ranges: [two], key: key("c0") }); // node-c takes the other block
      const left = held?.pool.cidr as string;
      // node-b's claim is dropped while its block still holds b0 (an operator, a bug elsewhere)
      const index = (parseCidr(left).network - two.cidr.network) / 16n;
      const claimRef = affinityClaimRef("", blockRange(blockLayout(two, 16), index) as Range);
      const claim = await inner.readClaim(claimRef);
      await inner.deleteClaim(claimRef, claim?.version as NonNullable<typeof claim>["version"]);
      const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
      const [got] = await a.allocate({ ranges: [two], key: key("a0") });
      expect(got?.pool.cidr).toBe(left);
      expect(await ownerOf(inner, "", two, left)).toBe("node-a");
      // the claimed block is read once, after the claim (the plan is made again from a fresh view)
      expect(reads.filter((r) => r === left)).toEqual([left]);
      expect(got?.address).not.toEqual(held?.address);
      const all = await holdings(inner);
      expect(all.map((h) => h.key).sort()).toEqual(["a0/net1", "b0/net1", "c0/net1"]);
      expect(new Set(all.map((h) => h.address)).size).toBe(3);
    },
  );
});
