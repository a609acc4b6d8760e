import { describe, expect, it } from "vitest";
import { withAffinityCache } from "./affinity-cache.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
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
});
