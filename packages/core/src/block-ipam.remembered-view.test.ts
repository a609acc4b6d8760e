import { describe, expect, it } from "vitest";
import { ETCD_LIKE, holdings, key, ownerOf } from "./block-ipam.fixtures.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { delegatingStore } from "./complete-store.js";
import { formatIp } from "./ip.js";
import { IpamCache } from "./ipam-cache.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { AFFINITY_IF_NAME, affinityClaimRef, affinityNetworkOf, blockLayout, blockRange, nodeBlockOrder } from "./node-blocks.js";
import { parseRange, type Range } from "./range.js";
import type { IpamStore } from "./store.js";

/**
 * Per-node blocks with the node's view as remembered (an IpamCache, as the agent keeps one): the
 * requests a steady ADD and DEL make, and what a remembered view gone stale costs — never a key
 * with two addresses.
 */

/** Every store call that reaches `store` (one request each on Kubernetes), by name and network. */
function counting(store: IpamStore) {
  const calls: string[] = [];
  const tally = <T>(call: string, result: T): T => {
    calls.push(call);
    return result;
  };
  const counted = delegatingStore(store, {
    readPool: (ref) => tally("readPool", store.readPool(ref)),
    writePool: (ref, pool, expected) => tally(expected === undefined ? "createPool" : "writePool", store.writePool(ref, pool, expected)),
    readClaim: (ref, options) => tally(`readClaim ${ref.network}`, store.readClaim(ref, options)),
    readClaims: (refs, options) => tally(`readClaims ${refs[0]?.network}`, store.readClaims(refs, options)),
    writeClaim: (ref, claim, expected) => tally(`writeClaim ${ref.network}`, store.writeClaim(ref, claim, expected)),
    deleteClaim: (ref, expected) => tally(`deleteClaim ${ref.network}`, store.deleteClaim(ref, expected)),
    commit: (writes) => tally("commit", store.commit(writes)),
  });
  return { store: counted, calls };
}

const range = parseRange({ range: "10.0.0.0/24" });
const affinity = affinityNetworkOf("net");
const noSleep = { sleep: async () => {} };
/** The node's first two blocks along its order. */
const firstBlocks = (node: string): Range[] => {
  const layout = blockLayout(range, 16);
  return [...nodeBlockOrder(layout, node)].slice(0, 2).map((i) => blockRange(layout, i) as Range);
};

describe("per-node blocks, the view as remembered", () => {
  it("whole-pool writes: a steady ADD is the address claim, the next block's claim checked, the pool write; a DEL the pool write and the claim's delete", async () => {
    const { store, calls } = counting(createMemoryStore());
    const cache = new IpamCache();
    // one allocator per call, as the agent builds one per CNI call
    const call = () => createNodeBlockIpam({ store, cache, node: "n1", blockSize: 16, retry: noSleep });
    await call().allocate({ network: "net", ranges: [range], key: key("c0") });
    // the first ADD claims the block, then plans again as remembered: the new block read (no pool
    // yet), the next block's claim checked at the commit, the pool created
    expect(calls).toEqual([`writeClaim ${affinity}`, "readPool", "writeClaim net", `readClaim ${affinity}`, "createPool"]);
    for (const id of ["c1", "c2"]) {
      calls.length = 0;
      await call().allocate({ network: "net", ranges: [range], key: key(id) });
      expect(calls).toEqual(["writeClaim net", `readClaim ${affinity}`, "writePool"]);
    }
    calls.length = 0;
    expect(await call().release({ network: "net", ranges: [range], key: key("c1") })).toHaveLength(1);
    expect(calls).toEqual(["writePool", "deleteClaim net"]);
  });

  it("entry-level commits (etcd-like): a steady ADD reads its view (the first unclaimed block's claim) and commits once; a DEL commits once", async () => {
    const { store, calls } = counting(createMemoryStore(ETCD_LIKE));
    const cache = new IpamCache();
    const call = () => createNodeBlockIpam({ store, cache, node: "n1", blockSize: 16, retry: noSleep });
    // the block claimed, then read once (its pool is folded into the memory from the next read on)
    for (const id of ["c0", "c2"]) await call().allocate({ network: "net", ranges: [range], key: key(id) });
    calls.length = 0;
    await call().allocate({ network: "net", ranges: [range], key: key("c1") });
    // the commit's fence compares the next block's pool, not its claim: the view is read (the claims
    // after the node's block, one request)
    expect(calls).toEqual([`readClaims ${affinity}`, "commit"]);
    calls.length = 0;
    expect(await call().release({ network: "net", ranges: [range], key: key("c1") })).toHaveLength(1);
    expect(calls).toEqual(["commit"]);
  });

  it.each<[string, MemoryStoreOptions]>([
    ["whole-pool writes", {}],
    ["whole-pool transactions", { transactions: true }],
  ])(
    "%s: the key placed behind the memory in the node's next block (claimed meanwhile) is found, not given a second address",
    async (_label, options) => {
      const inner = createMemoryStore(options);
      const agent = createNodeBlockIpam({ store: inner, cache: new IpamCache(), node: "n1", blockSize: 16, retry: noSleep });
      // another process of the same node, remembering nothing (the binary in direct mode)
      const direct = createNodeBlockIpam({ store: inner, node: "n1", blockSize: 16, retry: noSleep });
      const [first, next] = firstBlocks("n1");
      await agent.allocate({ network: "net", ranges: [range], key: key("c0") });
      // the direct writer fills the first block, claims the next and places k there
      for (let i = 0; ; i++) {
        const [got] = await direct.allocate({ network: "net", ranges: [range], key: key(`f${i}`) });
        if (got?.pool.cidr !== first?.cidr.text) {
          await direct.release({ network: "net", ranges: [range], key: key(`f${i}`) });
          break;
        }
      }
      const [k] = await direct.allocate({ network: "net", ranges: [range], key: key("k") });
      expect(k?.pool.cidr).toBe(next?.cidr.text);
      expect(await ownerOf(inner, "net", range, next?.cidr.text ?? "")).toBe("n1");
      // and an address of the first block is freed again (the reconciler, a DEL)
      await direct.release({ network: "net", ranges: [range], key: key("f3") });
      // the agent remembers one block and takes the next as unclaimed: its write of the first block
      // (read afresh after its recall's conflict: room again) would give k a second address, but
      // the commit's check of the next block's claim fails, and it plans again from fresh reads
      const before = agent.conflicts.conflicts;
      const [again] = await agent.allocate({ network: "net", ranges: [range], key: key("k") });
      expect(again && formatIp(again.address)).toBe(k && formatIp(k.address));
      expect(agent.conflicts.conflicts).toBeGreaterThan(before);
      const held = await holdings(inner);
      expect(held.filter((h) => h.key === "k/net1")).toHaveLength(1);
      expect(new Set(held.map((h) => h.address)).size).toBe(held.length);
      expect(new Set(held.map((h) => h.key)).size).toBe(held.length);
    },
  );

  it("the block remembered as the first unclaimed, taken by another node meanwhile: the commit's check fails, the ADD lands in the node's own block", async () => {
    const inner = createMemoryStore();
    const agent = createNodeBlockIpam({ store: inner, cache: new IpamCache(), node: "n1", blockSize: 16, retry: noSleep });
    const [first, next] = firstBlocks("n1");
    await agent.allocate({ network: "net", ranges: [range], key: key("c0") });
    // another node claims n1's next block (its own order reached it)
    const nextBlock = next as Range;
    const claim = {
      pool: { network: "net", cidr: nextBlock.cidr.text },
      key: attachmentKey({ containerId: "n2", ifName: AFFINITY_IF_NAME }),
    };
    await inner.writeClaim(affinityClaimRef("net", nextBlock), claim, undefined);
    expect(await ownerOf(inner, "net", range, nextBlock.cidr.text)).toBe("n2");
    const [got] = await agent.allocate({ network: "net", ranges: [range], key: key("c1") });
    expect(got?.pool.cidr).toBe(first?.cidr.text);
    // and its commit is checked against the block after it in the fresh view
    const [again] = await agent.allocate({ network: "net", ranges: [range], key: key("c2") });
    expect(again?.pool.cidr).toBe(first?.cidr.text);
    const held = await holdings(inner);
    expect(held.map((h) => h.key).sort()).toEqual(["c0/net1", "c1/net1", "c2/net1"]);
    expect(new Set(held.map((h) => h.address)).size).toBe(held.length);
  });
});
