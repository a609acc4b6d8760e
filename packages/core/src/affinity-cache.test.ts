import { describe, expect, it } from "vitest";
import { createAffinityMemory, withAffinityCache } from "./affinity-cache.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { RangeExhaustedError, StoreConflictError } from "./errors.js";
import { formatIp } from "./ip.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import {
  AFFINITY_IF_NAME,
  affinityClaimRef,
  affinityNetworkOf,
  blockLayout,
  blockPoolRef,
  blockRange,
  nodeBlockOrder,
} from "./node-blocks.js";
import { parseRange, type Range } from "./range.js";
import type { IpamStore } from "./store.js";

/**
 * Counts the claim calls that reach the store, by network: reads one at a time, and (separately)
 * writes; and the size of each batch read (`readClaims`, offered where the store offers it).
 */
function countingReads(store: IpamStore): {
  store: IpamStore;
  reads: Map<string, number>;
  writes: Map<string, number>;
  batches: number[];
} {
  const reads = new Map<string, number>();
  const writes = new Map<string, number>();
  const batches: number[] = [];
  const counted: IpamStore = {
    ...store,
    name: store.name,
    capabilities: store.capabilities,
    readClaim: (ref, options) => {
      reads.set(ref.network, (reads.get(ref.network) ?? 0) + 1);
      return store.readClaim(ref, options);
    },
    writeClaim: (ref, claim, expected) => {
      writes.set(ref.network, (writes.get(ref.network) ?? 0) + 1);
      return store.writeClaim(ref, claim, expected);
    },
  };
  const readClaims = store.readClaims;
  if (readClaims !== undefined) {
    counted.readClaims = (refs) => {
      batches.push(refs.length);
      return readClaims.call(store, refs);
    };
  }
  return { reads, writes, batches, store: counted };
}

describe("withAffinityCache", () => {
  const range = parseRange({ range: "10.0.0.0/24" });
  const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });

  it("reads each affinity claim once, every other claim every time; same allocations as without it", async () => {
    const memory = createMemoryStore();
    const { store, reads, writes } = countingReads(memory);
    const ipam = createNodeBlockIpam({ store: withAffinityCache(store), node: "n1", blockSize: 16 });
    const plain = createNodeBlockIpam({ store: createMemoryStore(), node: "n1", blockSize: 16 });
    for (let i = 0; i < 40; i++) {
      const [a] = await ipam.allocate({ ranges: [range], key: key(`c${i}`) });
      const [b] = await plain.allocate({ ranges: [range], key: key(`c${i}`) });
      expect(a?.address).toEqual(b?.address);
    }
    // 40 ADDs over 3 blocks: the claimed ones are read once; only the first unclaimed one is re-read.
    expect(reads.get("node-blocks")).toBeLessThan(50);
    // overlapping-range claims are never answered from the cache: each ADD's claim reaches the store
    // (a create-if-absent write, read only when it exists)
    expect((reads.get("") ?? 0) + (writes.get("") ?? 0)).toBeGreaterThanOrEqual(40);
  });

  it("forgets a claim it deletes", async () => {
    const memory = createMemoryStore();
    const cached = withAffinityCache(memory);
    const ref = { network: "node-blocks", address: "10.0.0.0" };
    const claim = { pool: { network: "", cidr: "10.0.0.0/28" }, key: attachmentKey({ containerId: "n1", ifName: "block" }) };
    const version = await cached.writeClaim(ref, claim, undefined);
    expect((await cached.readClaim(ref))?.version).toBe(version);
    await cached.deleteClaim(ref, version);
    expect(await cached.readClaim(ref)).toBeUndefined();
  });

  describe("as its node's only writer (soleWriter)", () => {
    const affinity = affinityNetworkOf("net");
    /** The node's blocks in its own order. */
    const order = (node: string) => {
      const layout = blockLayout(range, 16);
      return [...nodeBlockOrder(layout, node)].map((index) => blockRange(layout, index)).filter((b) => b !== undefined);
    };

    it("remembers a block read as unclaimed: once its block is known, a node's ADD and DEL read no affinity claim", async () => {
      const { store, reads } = countingReads(createMemoryStore());
      const ipam = createNodeBlockIpam({ store: withAffinityCache(store, { soleWriter: () => true }), node: "n1", blockSize: 16 });
      const plain = createNodeBlockIpam({ store: createMemoryStore(), node: "n1", blockSize: 16 });
      for (let i = 0; i < 40; i++) {
        const [a] = await ipam.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
        const [b] = await plain.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
        expect(a?.address).toEqual(b?.address);
      }
      // 40 ADDs fill 2 blocks and claim a third: the first block's claim is read once (unclaimed);
      // each block claimed presumes the next of the order unclaimed, so no walk reads it (4 reads before)
      expect(reads.get(affinity)).toBe(1);
      const before = reads.get(affinity);
      for (let i = 0; i < 40; i++) await ipam.release({ network: "net", ranges: [range], key: key(`c${i}`) });
      expect(reads.get(affinity)).toBe(before);
      expect(await ipam.lookup({ network: "net", ranges: [range], key: key("c0") })).toEqual([undefined]);
    });

    it("remembers a block presumed unclaimed only as its node's only writer, and never over a claim it has seen", async () => {
      const memory = createMemoryStore();
      const ref = { network: affinityNetworkOf("net"), address: "10.0.0.16" };
      for (const sole of [false, true]) {
        const { store, reads } = countingReads(memory);
        const cache = withAffinityCache(store, { soleWriter: () => sole });
        cache.presumeUnclaimed?.(ref);
        expect(await cache.readClaim(ref)).toBeUndefined();
        expect(reads.get(ref.network) ?? 0, `soleWriter ${sole}`).toBe(sole ? 0 : 1);
      }
      const taken = { pool: { network: "net", cidr: "10.0.0.16/28" }, key: attachmentKey({ containerId: "n2", ifName: AFFINITY_IF_NAME }) };
      await memory.writeClaim(ref, taken, undefined);
      const cache = withAffinityCache(memory, { soleWriter: () => true });
      expect((await cache.readClaim(ref))?.claim.key.containerId).toBe("n2");
      cache.presumeUnclaimed?.(ref);
      expect((await cache.readClaim(ref))?.claim.key.containerId).toBe("n2");
    });

    it("a remembered unclaimed block that another node took costs one failed claim and a fresh read; the node moves on", async () => {
      const memory = createMemoryStore();
      const ipam = createNodeBlockIpam({ store: withAffinityCache(memory, { soleWriter: () => true }), node: "n1", blockSize: 16 });
      // the first ADD claims n1's first block and presumes the next of its order unclaimed (unread)
      const held: string[] = [];
      const add = async (i: number) => {
        const [a] = await ipam.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
        if (a !== undefined) held.push(formatIp(a.address));
      };
      for (let i = 0; i < 2; i++) await add(i);
      const [own, next, after] = order("n1");
      if (own === undefined || next === undefined || after === undefined) throw new Error("n1 has three blocks in its order");
      // node n2 takes the block n1 remembers as unclaimed
      const taken = { pool: blockPoolRef("net", next), key: attachmentKey({ containerId: "n2", ifName: AFFINITY_IF_NAME }) };
      await memory.writeClaim(affinityClaimRef("net", next), taken, undefined);
      for (let i = 2; i < 20; i++) await add(i);
      expect(ipam.conflicts.conflicts).toBe(1);
      expect((await memory.readClaim(affinityClaimRef("net", after)))?.claim.key.containerId).toBe("n1");
      expect(await memory.readPool(blockPoolRef("net", next))).toBeUndefined();
      expect(new Set(held).size).toBe(20);
      const sizes = await Promise.all([own, after].map(async (b) => (await memory.readPool(blockPoolRef("net", b)))?.pool.size ?? 0));
      expect(sizes.reduce((sum, n) => sum + n, 0)).toBe(20);
    });

    /** n1's agent remembering its second block as unclaimed, then another process of n1 (direct mode, unseen) filling the first and placing "late" in the second. */
    async function unseenWriter(sole: () => boolean) {
      const memory = createMemoryStore();
      const agent = createNodeBlockIpam({ store: withAffinityCache(memory, { soleWriter: sole }), node: "n1", blockSize: 16 });
      const direct = createNodeBlockIpam({ store: memory, node: "n1", blockSize: 16 });
      for (let i = 0; i < 2; i++) await agent.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
      for (let i = 2; i < 16; i++) await direct.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
      const [late] = await direct.allocate({ network: "net", ranges: [range], key: key("late") });
      // a free address in the first block again: an ADD searching only that block would take it
      await direct.release({ network: "net", ranges: [range], key: key("c5") });
      const [own, next] = order("n1");
      expect(late?.range).toBeDefined();
      expect(own && (await memory.readPool(blockPoolRef("net", own)))?.pool.size).toBe(14);
      expect(next && (await memory.readPool(blockPoolRef("net", next)))?.pool.forKey(key("late"))).toBeDefined();
      return { memory, agent, direct, late };
    }

    it("once it is no longer the only writer, it reads afresh and finds a key another process of the node placed in a new block", async () => {
      let sole = true;
      const { agent, direct, late } = await unseenWriter(() => sole);
      sole = false;
      const [again] = await agent.allocate({ network: "net", ranges: [range], key: key("late") });
      expect(again?.address).toEqual(late?.address);
      await agent.release({ network: "net", ranges: [range], key: key("late") });
      expect(await direct.lookup({ network: "net", ranges: [range], key: key("late") })).toEqual([undefined]);
    });

    it("a DEL or lookup that finds nothing confirms the remembered unclaimed block with the store: an unseen writer's key is still found", async () => {
      const { agent, direct, late } = await unseenWriter(() => true);
      const [found] = await agent.lookup({ network: "net", ranges: [range], key: key("late") });
      expect(found?.address).toEqual(late?.address);
      const released = await agent.release({ network: "net", ranges: [range], key: key("late") });
      expect(released.map((r) => r.address)).toEqual([late?.address]);
      expect(await direct.lookup({ network: "net", ranges: [range], key: key("late") })).toEqual([undefined]);
      // a DEL of a key held nowhere: one fresh read of the next unclaimed block, then nothing
      expect(await agent.release({ network: "net", ranges: [range], key: key("never") })).toEqual([]);
    });

    it("STATUS (hasRoom) does not count on a remembered unclaimed block: another node took it and filled the range", async () => {
      const small = parseRange({ range: "10.0.0.0/28" });
      const memory = createMemoryStore();
      const n1 = createNodeBlockIpam({ store: withAffinityCache(memory, { soleWriter: () => true }), node: "n1", blockSize: 4 });
      const n2 = createNodeBlockIpam({ store: memory, node: "n2", blockSize: 4 });
      for (let i = 0; i < 2; i++) await n1.allocate({ network: "net", ranges: [small], key: key(`a${i}`) });
      expect(await n1.hasRoom("net", small)).toBe(true);
      // n2 claims every other block and fills the range, borrowing n1's free addresses
      for (let i = 0; ; i++) {
        const full = await n2.allocate({ network: "net", ranges: [small], key: key(`b${i}`) }).then(
          () => false,
          (error: unknown) => error instanceof RangeExhaustedError,
        );
        if (full) break;
      }
      expect(await n1.hasRoom("net", small)).toBe(false);
      await expect(n1.allocate({ network: "net", ranges: [small], key: key("a9") })).rejects.toThrow(RangeExhaustedError);
    });

    it("two instances sharing one memory (a client replaced while calls on the old one finish) never answer unclaimed for a block either claimed", async () => {
      const memory = createMemoryStore();
      const shared = createAffinityMemory();
      const oldClient = withAffinityCache(memory, { soleWriter: () => true, memory: shared });
      const newClient = withAffinityCache(memory, { soleWriter: () => true, memory: shared });
      const [first] = order("n1");
      if (first === undefined) throw new Error("n1 has a block");
      const ref = affinityClaimRef("net", first);
      expect(await newClient.readClaim(ref)).toBeUndefined(); // remembered as unclaimed
      const claim = { pool: blockPoolRef("net", first), key: attachmentKey({ containerId: "n1", ifName: AFFINITY_IF_NAME }) };
      await oldClient.writeClaim(ref, claim, undefined);
      expect((await newClient.readClaim(ref))?.claim.key.containerId).toBe("n1");
      // and a fresh read goes to the store, past any memory
      const counted = countingReads(memory);
      const alone = withAffinityCache(counted.store, { soleWriter: () => true });
      await alone.readClaim(ref);
      await alone.readClaim(ref);
      await alone.readClaim(ref, { fresh: true });
      expect(counted.reads.get(affinity)).toBe(2);
    });
  });

  describe("reading several claims in one request (a store with readClaims, like etcd)", () => {
    const affinity = affinityNetworkOf("net");
    const layout = blockLayout(range, 16);
    const order = (node: string) =>
      [...nodeBlockOrder(layout, node)].map((index) => blockRange(layout, index)).filter((b) => b !== undefined);
    const refsOf = (node: string, from: number, to: number) =>
      order(node)
        .slice(from, to)
        .map((b) => affinityClaimRef("net", b));
    /** Node `owner` claims these blocks, straight in the store. */
    const claimAll = async (store: IpamStore, owner: string, blocks: Range[]) => {
      for (const b of blocks) {
        const claim = { pool: blockPoolRef("net", b), key: attachmentKey({ containerId: owner, ifName: AFFINITY_IF_NAME }) };
        await store.writeClaim(affinityClaimRef("net", b), claim, undefined);
      }
    };

    it("answers the claims it remembers from memory and reads only the others, together; it is offered only where the store reads batches", async () => {
      const memory = createMemoryStore({ claimBatches: true });
      await claimAll(memory, "n2", order("n1").slice(0, 2));
      const { store, reads, batches } = countingReads(memory);
      const cached = withAffinityCache(store, { soleWriter: () => true });
      const [first] = refsOf("n1", 0, 1);
      expect((first && (await cached.readClaim(first)))?.claim.key.containerId).toBe("n2");
      const four = refsOf("n1", 0, 4);
      const plainClaim = { network: "", address: "10.0.0.5" };
      const answers = await cached.readClaims?.([...four, plainClaim]);
      expect(answers?.map((a) => a?.claim.key.containerId)).toEqual(["n2", "n2", undefined, undefined, undefined]);
      // the first was remembered: 3 affinity claims and the address claim, in one request
      expect(batches).toEqual([4]);
      // now all four are remembered (two claimed, two unclaimed); an address claim is read every time
      expect((await cached.readClaims?.(four))?.map((a) => a?.claim.key.containerId)).toEqual(["n2", "n2", undefined, undefined]);
      await cached.readClaims?.([plainClaim, ...four]);
      expect(batches).toEqual([4]);
      expect(reads.get(affinity)).toBe(1);
      expect(reads.get("")).toBe(1); // the lone address claim, one readClaim
      expect(withAffinityCache(createMemoryStore()).readClaims).toBeUndefined();
    });

    it("a claim lost to another node forgets every block of that network it remembered as unclaimed, and only of that network", async () => {
      const memory = createMemoryStore({ claimBatches: true });
      const { store, batches } = countingReads(memory);
      const cached = withAffinityCache(store, { soleWriter: () => true });
      const here = refsOf("n1", 0, 3);
      const elsewhere = order("n1")
        .slice(0, 2)
        .map((b) => affinityClaimRef("other", b));
      await cached.readClaims?.([...here, ...elsewhere]); // all unclaimed, all remembered
      const [lost] = order("n1");
      if (lost === undefined) throw new Error("n1 has a block");
      await claimAll(memory, "n2", [lost]);
      const mine = { pool: blockPoolRef("net", lost), key: attachmentKey({ containerId: "n1", ifName: AFFINITY_IF_NAME }) };
      await expect(cached.writeClaim(affinityClaimRef("net", lost), mine, undefined)).rejects.toBeInstanceOf(StoreConflictError);
      const again = await cached.readClaims?.([...here, ...elsewhere]);
      expect(again?.map((a) => a?.claim.key.containerId)).toEqual(["n2", undefined, undefined, undefined, undefined]);
      // the three of "net" were read afresh; those of "other" came from memory
      expect(batches).toEqual([5, 3]);
    });

    it("a fresh node whose next blocks other nodes took walks past them in one request; then its ADDs and DELs read no claim", async () => {
      const walk = async (claimBatches: boolean) => {
        const memory = createMemoryStore({ claimBatches });
        await claimAll(memory, "n2", order("n1").slice(0, 5));
        const counted = countingReads(memory);
        const ipam = createNodeBlockIpam({
          store: withAffinityCache(counted.store, { soleWriter: () => true }),
          node: "n1",
          blockSize: 16,
        });
        const [first] = await ipam.allocate({ network: "net", ranges: [range], key: key("c0") });
        const afterFirst = { reads: counted.reads.get(affinity) ?? 0, batches: [...counted.batches] };
        for (let i = 1; i < 20; i++) await ipam.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
        for (let i = 0; i < 20; i++) await ipam.release({ network: "net", ranges: [range], key: key(`c${i}`) });
        const owners = await Promise.all(
          order("n1").map(async (b) => (await memory.readClaim(affinityClaimRef("net", b)))?.claim.key.containerId),
        );
        return { first, afterFirst, total: { reads: counted.reads.get(affinity) ?? 0, batches: counted.batches }, owners };
      };
      const batched = await walk(true);
      const single = await walk(false);
      // the same blocks: n1 claims the 6th and 7th of its order (20 addresses, blocks of 16)
      expect(batched.owners).toEqual(single.owners);
      expect(batched.owners.slice(0, 8)).toEqual(["n2", "n2", "n2", "n2", "n2", "n1", "n1", undefined]);
      expect(batched.first?.address).toEqual(single.first?.address);
      // one at a time: the five taken blocks and the first unclaimed one (claimed); then none — each
      // block claimed presumes the next of the order unclaimed (8 reads before: the walk read both)
      expect(single.afterFirst).toEqual({ reads: 6, batches: [] });
      expect(single.total).toEqual({ reads: 6, batches: [] });
      // in one request: the first 8 of its order (5 taken, 3 unclaimed, remembered); nothing after
      expect(batched.afterFirst).toEqual({ reads: 0, batches: [8] });
      expect(batched.total).toEqual({ reads: 0, batches: [8] });
    });

    it("reads ahead in doubling windows along a long walk", async () => {
      const wide = parseRange({ range: "10.0.0.0/20" }); // 256 blocks of 16
      const wideLayout = blockLayout(wide, 16);
      const wideOrder = [...nodeBlockOrder(wideLayout, "n1")].map((index) => blockRange(wideLayout, index)).filter((b) => b !== undefined);
      const memory = createMemoryStore({ claimBatches: true });
      await claimAll(memory, "n2", wideOrder.slice(0, 20));
      const counted = countingReads(memory);
      const ipam = createNodeBlockIpam({ store: withAffinityCache(counted.store), node: "n1", blockSize: 16 });
      await ipam.allocate({ network: "net", ranges: [wide], key: key("c0") });
      // 8 taken, then 16 more: 12 taken and the first unclaimed one, which n1 claims
      expect(counted.batches).toEqual([8, 16]);
      expect((await memory.readClaim(affinityClaimRef("net", wideOrder[20] as Range)))?.claim.key.containerId).toBe("n1");
    });
  });
});
