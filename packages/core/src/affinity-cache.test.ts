import { describe, expect, it } from "vitest";
import { createAffinityMemory, withAffinityCache } from "./affinity-cache.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { RangeExhaustedError } from "./errors.js";
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
    // 40 ADDs over 3 blocks: the claimed ones are read once; only the first unclaimed one is re-read
    // (twice per ADD on this whole-pool store: in the ADD's view, and as its commit's fence).
    expect(reads.get("node-blocks")).toBeLessThan(2 * 40 + 10);
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

  describe("with writers it does not see", () => {
    const affinity = affinityNetworkOf("net");
    /** The node's blocks in its own order. */
    const order = (node: string) => {
      const layout = blockLayout(range, 16);
      return [...nodeBlockOrder(layout, node)].map((index) => blockRange(layout, index)).filter((b) => b !== undefined);
    };

    it("never remembers a block as unclaimed: each walk reads the first unclaimed block of the order from the store", async () => {
      const { store, reads } = countingReads(createMemoryStore());
      const cached = withAffinityCache(store);
      const [first] = order("n1");
      if (first === undefined) throw new Error("n1 has a block");
      const ref = affinityClaimRef("net", first);
      expect(await cached.readClaim(ref)).toBeUndefined();
      expect(await cached.readClaim(ref)).toBeUndefined();
      expect(reads.get(affinity)).toBe(2);
    });

    /** n1's agent, then another process of n1 (direct mode, unseen) filling the first block and placing "late" in the second. */
    async function unseenWriter() {
      const memory = createMemoryStore();
      const agent = createNodeBlockIpam({ store: withAffinityCache(memory), node: "n1", blockSize: 16 });
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

    it("an ADD finds a key another process of the node placed in a block it claimed unseen: no second address", async () => {
      const { agent, direct, late } = await unseenWriter();
      const [again] = await agent.allocate({ network: "net", ranges: [range], key: key("late") });
      expect(again?.address).toEqual(late?.address);
      await agent.release({ network: "net", ranges: [range], key: key("late") });
      expect(await direct.lookup({ network: "net", ranges: [range], key: key("late") })).toEqual([undefined]);
    });

    it("a lookup and a DEL find that key too", async () => {
      const { agent, direct, late } = await unseenWriter();
      const [found] = await agent.lookup({ network: "net", ranges: [range], key: key("late") });
      expect(found?.address).toEqual(late?.address);
      const released = await agent.release({ network: "net", ranges: [range], key: key("late") });
      expect(released.map((r) => r.address)).toEqual([late?.address]);
      expect(await direct.lookup({ network: "net", ranges: [range], key: key("late") })).toEqual([undefined]);
      expect(await agent.release({ network: "net", ranges: [range], key: key("never") })).toEqual([]);
    });

    it("STATUS (hasRoom) counts no block another node took and filled", async () => {
      const small = parseRange({ range: "10.0.0.0/28" });
      const memory = createMemoryStore();
      const n1 = createNodeBlockIpam({ store: withAffinityCache(memory), node: "n1", blockSize: 4 });
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

    it("two instances sharing one memory (a client replaced while calls on the old one finish) see the claims either wrote", async () => {
      const memory = createMemoryStore();
      const shared = createAffinityMemory();
      const oldClient = withAffinityCache(memory, { memory: shared });
      const newClient = withAffinityCache(memory, { memory: shared });
      const [first] = order("n1");
      if (first === undefined) throw new Error("n1 has a block");
      const ref = affinityClaimRef("net", first);
      expect(await newClient.readClaim(ref)).toBeUndefined();
      const claim = { pool: blockPoolRef("net", first), key: attachmentKey({ containerId: "n1", ifName: AFFINITY_IF_NAME }) };
      await oldClient.writeClaim(ref, claim, undefined);
      const counted = countingReads(memory);
      const viaNew = withAffinityCache(counted.store, { memory: shared });
      expect((await viaNew.readClaim(ref))?.claim.key.containerId).toBe("n1");
      expect(counted.reads.get(affinity)).toBeUndefined();
      // and a fresh read goes to the store, past any memory
      await viaNew.readClaim(ref, { fresh: true });
      expect(counted.reads.get(affinity)).toBe(1);
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

    it("answers the claims it remembers from memory and reads only the others, together", async () => {
      const memory = createMemoryStore({ batchReads: true });
      await claimAll(memory, "n2", order("n1").slice(0, 2));
      const { store, reads, batches } = countingReads(memory);
      const cached = withAffinityCache(store);
      const [first] = refsOf("n1", 0, 1);
      expect((first && (await cached.readClaim(first)))?.claim.key.containerId).toBe("n2");
      const four = refsOf("n1", 0, 4);
      const plainClaim = { network: "", address: "10.0.0.5" };
      const answers = await cached.readClaims?.([...four, plainClaim]);
      expect(answers?.map((a) => a?.claim.key.containerId)).toEqual(["n2", "n2", undefined, undefined, undefined]);
      // the first was remembered: 3 affinity claims and the address claim, in one request
      expect(batches).toEqual([4]);
      // now the two claimed are remembered; the two unclaimed and an address claim are read every time
      expect((await cached.readClaims?.(four))?.map((a) => a?.claim.key.containerId)).toEqual(["n2", "n2", undefined, undefined]);
      await cached.readClaims?.([plainClaim, ...four]);
      expect(batches).toEqual([4, 2, 3]);
      expect(reads.get(affinity)).toBe(1);
    });

    it("a fresh node whose next blocks other nodes took walks past them in one request; then each ADD and DEL reads one claim, its first unclaimed block", async () => {
      const walk = async (batchReads: boolean) => {
        const memory = createMemoryStore({ batchReads });
        await claimAll(memory, "n2", order("n1").slice(0, 5));
        const counted = countingReads(memory);
        const ipam = createNodeBlockIpam({
          store: withAffinityCache(counted.store),
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
      // one at a time: the five taken blocks and the first unclaimed one (claimed), then the fresh
      // view after the claim reads the next; each of the 39 calls after reads the first unclaimed
      // block of the order (an unclaimed block is never remembered: another process of the node
      // may claim it and place a key there), and the ADD that claims the 7th reads the 8th again
      // (and, on this whole-pool store, each of the 20 ADDs reads its first unclaimed block's claim
      // once more: the commit's fence, just before its write)
      expect(single.afterFirst).toEqual({ reads: 7 + 1, batches: [] });
      expect(single.total).toEqual({ reads: 7 + 39 + 1 + 20, batches: [] });
      // in one request: the first 8 of its order (5 taken, 3 unclaimed); after the claim, the two
      // unclaimed ones of that window again
      expect(batched.afterFirst).toEqual({ reads: 1, batches: [8, 2] }); // the fence
      // (the 7th and 8th of the order together, 16 calls, until n1 claims the 7th; then the 8th
      // alone, 24 calls: one readClaim each)
      expect(batched.total).toEqual({ reads: 24 + 20, batches: [8, 2, ...Array.from({ length: 16 }, () => 2)] });
    });

    it("reads ahead in doubling windows along a long walk", async () => {
      const wide = parseRange({ range: "10.0.0.0/20" }); // 256 blocks of 16
      const wideLayout = blockLayout(wide, 16);
      const wideOrder = [...nodeBlockOrder(wideLayout, "n1")].map((index) => blockRange(wideLayout, index)).filter((b) => b !== undefined);
      const memory = createMemoryStore({ batchReads: true });
      await claimAll(memory, "n2", wideOrder.slice(0, 20));
      const counted = countingReads(memory);
      const ipam = createNodeBlockIpam({ store: withAffinityCache(counted.store), node: "n1", blockSize: 16 });
      await ipam.allocate({ network: "net", ranges: [wide], key: key("c0") });
      // 8 taken, then 16 more: 12 taken and the first unclaimed one, which n1 claims; then the fresh
      // view reads the three claims of that window it does not remember (unclaimed)
      expect(counted.batches).toEqual([8, 16, 3]);
      expect((await memory.readClaim(affinityClaimRef("net", wideOrder[20] as Range)))?.claim.key.containerId).toBe("n1");
    });
  });
});
