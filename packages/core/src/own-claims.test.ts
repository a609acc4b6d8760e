import { describe, expect, it } from "vitest";
import { formatIp } from "./ip.js";
import { createIpam } from "./ipam.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { withOwnClaimMemory } from "./own-claims.js";
import { parseRange } from "./range.js";
import type { IpamStore } from "./store.js";

/** Counts the claim reads that reach the store. */
function countingClaimReads(store: IpamStore): { store: IpamStore; reads: () => number } {
  let reads = 0;
  const counted: IpamStore = {
    ...store,
    name: store.name,
    capabilities: store.capabilities,
    readClaim: (ref) => {
      reads++;
      return store.readClaim(ref);
    },
  };
  return { store: counted, reads: () => reads };
}

const range = parseRange({ range: "10.0.0.0/29" });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const noSleep = { sleep: async () => {} };

describe.each<[string, MemoryStoreOptions]>([
  ["separate writes", { transactions: false }],
  ["atomic commits", { transactions: true }],
  ["entry-level commits", { transactions: true, entryWrites: true }],
])("withOwnClaimMemory: %s", (_name, storeOptions) => {
  it("a release deletes the claim this process wrote without reading it; without the memory it reads it", async () => {
    for (const remember of [true, false]) {
      const shared = createMemoryStore(storeOptions);
      const { store, reads } = countingClaimReads(shared);
      const ipam = createIpam({ store: remember ? withOwnClaimMemory(store) : store, retry: noSleep });
      for (const id of ["a", "b", "c"]) await ipam.allocate({ ranges: [range], key: key(id) });
      const before = reads();
      for (const id of ["a", "b", "c"]) expect(await ipam.release({ ranges: [range], key: key(id) })).toHaveLength(1);
      expect(reads() - before).toBe(remember ? 0 : 3);
      expect(await shared.listClaims("")).toEqual([]);
    }
  });

  it("a claim changed by another writer since is not deleted at the remembered version; the address stays usable", async () => {
    const shared = createMemoryStore(storeOptions);
    const ipam = createIpam({ store: withOwnClaimMemory(shared), retry: noSleep });
    const [held] = await ipam.allocate({ ranges: [range], key: key("a") });
    if (held === undefined) throw new Error("nothing allocated");
    const ref = { network: "", address: formatIp(held.address) };
    const stored = await shared.readClaim(ref);
    if (stored === undefined) throw new Error("no claim written");
    // another process rewrites the claim (same content, new version): the remembered version is stale
    await shared.writeClaim(ref, stored.claim, stored.version);
    expect(await ipam.release({ ranges: [range], key: key("a") })).toHaveLength(1);
    // separate writes: the delete at the stale version failed, so the release read the claim afresh
    // and, its pool no longer holding the address, fenced the pool and deleted it (no dangling claim);
    // commits: the failed commit made the retry read the claim afresh and delete it at its new version
    expect(await shared.readClaim(ref)).toBeUndefined();
    // either way the address is free again: an overlapping pool of the network can take it
    const other = createIpam({ store: shared, retry: noSleep });
    const [again] = await other.allocate({ ranges: [parseRange({ range: "10.0.0.0/30" })], key: key("z") });
    expect(again && formatIp(again.address)).toBe(ref.address);
    expect((await shared.readPool({ network: "", cidr: range.cidr.text }))?.pool.forKey(key("a"))).toBeUndefined();
  });

  it("forgets the oldest claims beyond its limit: their release reads them", async () => {
    const shared = createMemoryStore(storeOptions);
    const { store, reads } = countingClaimReads(shared);
    const ipam = createIpam({ store: withOwnClaimMemory(store, { limit: 2 }), retry: noSleep });
    for (const id of ["a", "b", "c"]) await ipam.allocate({ ranges: [range], key: key(id) });
    const before = reads();
    await ipam.release({ ranges: [range], key: key("a") });
    expect(reads() - before).toBe(1);
    await ipam.release({ ranges: [range], key: key("c") });
    expect(reads() - before).toBe(1);
  });
});

describe("withOwnClaimMemory over a store that reads several claims in one request", () => {
  it("answers the claims it wrote from memory and reads only the others, together", async () => {
    const shared = createMemoryStore({ batchReads: true });
    const batches: string[][] = [];
    const readClaims = shared.readClaims;
    if (readClaims === undefined) throw new Error("the memory store offers readClaims with batchReads");
    const counted: IpamStore = {
      ...shared,
      readClaims: (refs) => {
        batches.push(refs.map((r) => r.address));
        return readClaims.call(shared, refs);
      },
    };
    const remembering = withOwnClaimMemory(counted);
    const claim = (id: string) => ({ pool: { network: "", cidr: range.cidr.text }, key: key(id) });
    const mine = { network: "", address: "10.0.0.1" };
    const theirs = { network: "", address: "10.0.0.2" };
    const nobody = { network: "", address: "10.0.0.3" };
    const myVersion = await remembering.writeClaim(mine, claim("a"), undefined);
    const theirVersion = await shared.writeClaim(theirs, claim("b"), undefined);
    const read = await remembering.readClaims?.([mine, theirs, nobody]);
    expect(read?.map((r) => r?.version)).toEqual([myVersion, theirVersion, undefined]);
    expect(batches).toEqual([["10.0.0.2", "10.0.0.3"]]);
  });
});
