import { describe, expect, it } from "vitest";
import { withAffinityCache } from "./affinity-cache.js";
import { createNodeBlockIpam } from "./block-ipam.js";
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
import { parseRange } from "./range.js";
import type { IpamStore } from "./store.js";

/** Counts the claim calls that reach the store, by network: reads, and (separately) writes. */
function countingReads(store: IpamStore): { store: IpamStore; reads: Map<string, number>; writes: Map<string, number> } {
  const reads = new Map<string, number>();
  const writes = new Map<string, number>();
  return {
    reads,
    writes,
    store: {
      ...store,
      name: store.name,
      capabilities: store.capabilities,
      readClaim: (ref) => {
        reads.set(ref.network, (reads.get(ref.network) ?? 0) + 1);
        return store.readClaim(ref);
      },
      writeClaim: (ref, claim, expected) => {
        writes.set(ref.network, (writes.get(ref.network) ?? 0) + 1);
        return store.writeClaim(ref, claim, expected);
      },
    },
  };
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
      // 40 ADDs fill 2 blocks and claim a third: each block's claim is read once (3 claimed, 1 unclaimed)
      expect(reads.get(affinity)).toBe(4);
      const before = reads.get(affinity);
      for (let i = 0; i < 40; i++) await ipam.release({ network: "net", ranges: [range], key: key(`c${i}`) });
      expect(reads.get(affinity)).toBe(before);
      expect(await ipam.lookup({ network: "net", ranges: [range], key: key("c0") })).toEqual([undefined]);
    });

    it("a remembered unclaimed block that another node took costs one failed claim and a fresh read; the node moves on", async () => {
      const memory = createMemoryStore();
      const ipam = createNodeBlockIpam({ store: withAffinityCache(memory, { soleWriter: () => true }), node: "n1", blockSize: 16 });
      // the first ADD claims n1's first block; the second reads n1's next block: unclaimed, remembered
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

    it("once it is no longer the only writer, it reads afresh and finds a key another process of the node placed in a new block", async () => {
      const memory = createMemoryStore();
      let sole = true;
      const agent = createNodeBlockIpam({ store: withAffinityCache(memory, { soleWriter: () => sole }), node: "n1", blockSize: 16 });
      const direct = createNodeBlockIpam({ store: memory, node: "n1", blockSize: 16 });
      await agent.allocate({ network: "net", ranges: [range], key: key("c0") }); // remembers n1's second block as unclaimed
      // another process of node n1 (direct mode) fills the first block and claims the second
      for (let i = 1; i < 16; i++) await direct.allocate({ network: "net", ranges: [range], key: key(`c${i}`) });
      const [late] = await direct.allocate({ network: "net", ranges: [range], key: key("late") });
      sole = false;
      const [again] = await agent.allocate({ network: "net", ranges: [range], key: key("late") });
      expect(again?.address).toEqual(late?.address);
      await agent.release({ network: "net", ranges: [range], key: key("late") });
      expect(await direct.lookup({ network: "net", ranges: [range], key: key("late") })).toEqual([undefined]);
    });
  });
});
