import { describe, expect, it } from "vitest";
import { createNodeBlockIpam } from "./block-ipam.js";
import { delegatingStore } from "./complete-store.js";
import { createIpam } from "./ipam.js";
import { IpamCache } from "./ipam-cache.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { affinityNetworkOf } from "./node-blocks.js";
import { parseRange } from "./range.js";
import type { IpamStore } from "./store.js";

/** The store calls that reach `store`: pool reads, and claim read requests by network (a batch one per network in it). */
function counting(store: IpamStore) {
  const pools: string[] = [];
  const claims = new Map<string, number>();
  const claimRead = (network: string) => claims.set(network, (claims.get(network) ?? 0) + 1);
  const counted = delegatingStore(store, {
    readPool: (ref) => {
      pools.push(ref.cidr);
      return store.readPool(ref);
    },
    readClaim: (ref, options) => {
      claimRead(ref.network);
      return store.readClaim(ref, options);
    },
    readClaims: (refs, options) => {
      for (const network of new Set(refs.map((ref) => ref.network))) claimRead(network);
      return store.readClaims(refs, options);
    },
  });
  const reset = () => {
    pools.length = 0;
    claims.clear();
  };
  return { store: counted, pools, claims, reset };
}

const range = parseRange({ range: "10.0.0.0/24" });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const noSleep = { sleep: async () => {} };
const affinity = affinityNetworkOf("net");

describe.each<[string, MemoryStoreOptions]>([
  ["whole-pool writes", {}],
  ["etcd-like (entry-level commits, claim batches)", { transactions: true, entryWrites: true, batchReads: true }],
])("IpamCache: %s", (_name, storeOptions) => {
  it("kept across calls, each with an allocator of its own (as the agent): a DEL of the key an earlier call added reads no pool and no claim at all", async () => {
    for (const kept of [true, false]) {
      const { store, pools, claims, reset } = counting(createMemoryStore(storeOptions));
      const cache = new IpamCache();
      // one allocator per call, as the agent builds one per CNI call
      const call = () => createNodeBlockIpam({ store, cache: kept ? cache : new IpamCache(), node: "n1", blockSize: 16, retry: noSleep });
      await call().allocate({ network: "net", ranges: [range], key: key("c0") });
      const [held] = await call().allocate({ network: "net", ranges: [range], key: key("c1") });
      reset();
      const released = await call().release({ network: "net", ranges: [range], key: key("c1") });
      expect(released.map((r) => r.address)).toEqual([held?.address]);
      if (kept) {
        // the block as last seen among the node's blocks as remembered, the claim as written: no read
        // (the release's compare-and-swap at the recalled version checks "held here")
        expect({ pools, address: claims.get("net") ?? 0, affinity: claims.get(affinity) ?? 0 }).toEqual({
          pools: [],
          address: 0,
          affinity: 0,
        });
      } else {
        // a fresh memory: the node's claimed block's claim (with the next one's, in one request where
        // the store reads claims together), the pool and the address claim are read
        expect(pools).toEqual([held?.pool.cidr]);
        expect(claims.get("net")).toBe(1);
        expect(claims.get(affinity)).toBe(storeOptions.batchReads === true ? 1 : 2);
      }
    }
  });

  it("the plain allocator uses the claim memories, and teaches no pool", async () => {
    const { store, pools, claims, reset } = counting(createMemoryStore(storeOptions));
    const cache = new IpamCache();
    const [held] = await createIpam({ store, cache, retry: noSleep }).allocate({ network: "net", ranges: [range], key: key("a") });
    if (held === undefined) throw new Error("nothing allocated");
    expect(cache.recall(held.pool)).toBeUndefined();
    reset();
    expect(await createIpam({ store, cache, retry: noSleep }).release({ network: "net", ranges: [range], key: key("a") })).toHaveLength(1);
    expect(claims.get("net") ?? 0).toBe(0);
    expect(pools).toEqual([held.pool.cidr]);
  });

  it("a cache sharing another's affinity claims (a replaced client) knows the claims it saw, not its own claims nor its pools", async () => {
    const { store, pools, claims, reset } = counting(createMemoryStore(storeOptions));
    const old = new IpamCache();
    const [held] = await createNodeBlockIpam({ store, cache: old, node: "n1", blockSize: 16 }).allocate({
      network: "net",
      ranges: [range],
      key: key("c0"),
    });
    const successor = new IpamCache({ affinityFrom: old });
    expect(successor.recall(held?.pool ?? { network: "", cidr: "" })).toBeUndefined();
    reset();
    await createNodeBlockIpam({ store, cache: successor, node: "n1", blockSize: 16 }).release({
      network: "net",
      ranges: [range],
      key: key("c0"),
    });
    // the claimed block is known; the first unclaimed one is read, as always; pool and address claim read afresh
    expect({ pools, address: claims.get("net"), affinity: claims.get(affinity) }).toEqual({
      pools: [held?.pool.cidr],
      address: 1,
      affinity: 1,
    });
  });
});
