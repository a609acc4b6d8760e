import { describe, expect, it } from "vitest";
import { completeStore, delegatingStore } from "./complete-store.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { Pool } from "./pool.js";
import type { StoreBackend } from "./store.js";

const claim = { pool: { network: "n", cidr: "10.0.0.0/28" }, key: attachmentKey({ containerId: "c1", ifName: "eth0" }) };
const pool = { network: "n", cidr: "10.0.0.0/28" };

/** A backend with no optional ability: it lists only references, reads claims, and counts its calls. */
function bare(calls: string[]): StoreBackend {
  const memory = createMemoryStore();
  return {
    name: "bare",
    capabilities: {
      crossProcess: false,
      distributed: false,
      transactions: false,
      entryWrites: false,
      batchReads: false,
      bulkLists: false,
      nodePools: false,
    },
    readPool: (ref) => {
      calls.push("readPool");
      return memory.readPool(ref);
    },
    writePool: (ref, p, expected) => memory.writePool(ref, p, expected),
    listPools: (options) => {
      if (options?.contents === true) throw new Error("asked for contents without bulkLists");
      calls.push("listPools");
      return memory.listPools();
    },
    readClaims: (refs) => {
      calls.push(`readClaims(${refs.length})`);
      return memory.readClaims(refs);
    },
    writeClaim: (ref, c, expected) => memory.writeClaim(ref, c, expected),
    deleteClaim: (ref, expected) => memory.deleteClaim(ref, expected),
    listClaims: (networks, options) => {
      if (options?.contents === true) throw new Error("asked for contents without bulkLists");
      calls.push(`listClaims(${networks.join(",")})`);
      return memory.listClaims(networks as string[]);
    },
    close: () => memory.close(),
  };
}

describe("completeStore", () => {
  it("refuses node-slice pool refs when the backend has no nodePools: reads, writes, claims naming one, commit steps", async () => {
    const calls: string[] = [];
    const store = completeStore(bare(calls));
    const sliced = { ...pool, node: "node-a" };
    const empty = Pool.empty(parseCidr(pool.cidr));
    await expect(store.readPool(sliced)).rejects.toMatchObject({
      code: "STORE_REJECTED",
      message: expect.stringContaining("n/10.0.0.0/28@node-a"),
    });
    await expect(store.writePool(sliced, empty, undefined)).rejects.toMatchObject({ code: "STORE_REJECTED" });
    await expect(store.writeClaim({ network: "n", address: "10.0.0.1" }, { ...claim, pool: sliced }, undefined)).rejects.toMatchObject({
      code: "STORE_REJECTED",
    });
    expect(calls).toEqual([]);
    expect(await store.listPools()).toEqual([]);
    const transactional = createMemoryStore({ transactions: true });
    await expect(transactional.commit([{ kind: "pool", ref: sliced, pool: empty, expected: undefined }])).rejects.toMatchObject({
      code: "STORE_REJECTED",
    });
    expect(await transactional.listPools()).toEqual([]);
    // with nodePools, the node's pool is a pool of its own
    const keeping = createMemoryStore({ nodePools: true });
    await keeping.writePool(sliced, empty, undefined);
    expect(await keeping.readPool(pool)).toBeUndefined();
    expect(await keeping.listPools()).toEqual([sliced]);
  });

  it("fills in what the capabilities say the backend lacks: listings with contents, readClaim, commit", async () => {
    const calls: string[] = [];
    const store = completeStore(bare(calls));
    const version = await store.writePool(pool, Pool.empty(parseCidr(pool.cidr)), undefined);
    const claimed = await store.writeClaim({ network: "n", address: "10.0.0.1" }, claim, undefined);
    expect((await store.listPools({ contents: true })).map((p) => ("stored" in p ? [p.ref, p.stored.version] : p))).toEqual([
      [pool, version],
    ]);
    expect(await store.listClaims(["n", "n", "m"], { contents: true })).toEqual([
      { ref: { network: "n", address: "10.0.0.1" }, stored: { claim, version: claimed } },
    ]);
    expect(await store.readClaim({ network: "n", address: "10.0.0.1" })).toEqual({ claim, version: claimed });
    expect(await store.readClaims([])).toEqual([]);
    expect(calls).toEqual(["listPools", "readPool", "listClaims(n,m)", "readClaims(1)", "readClaims(1)"]);
    await expect(store.commit([{ kind: "check-pool", ref: pool, expected: version }])).rejects.toMatchObject({ code: "STORE_REJECTED" });
    expect(completeStore(store)).toBe(store);
  });
});

describe("delegatingStore", () => {
  it("passes everything through; overrides win, and the derived reads go through them", async () => {
    const memory = createMemoryStore({ bulkLists: true, batchReads: true });
    const ref = { network: "n", address: "10.0.0.1" };
    const version = await memory.writeClaim(ref, claim, undefined);
    const reads: string[] = [];
    const overridden = delegatingStore(memory, {
      readClaim: (r) => {
        reads.push(r.address);
        return memory.readClaim(r);
      },
    });
    expect(overridden.capabilities).toBe(memory.capabilities);
    // batch reads and listings with contents go through the override, never around it
    expect((await overridden.readClaims([ref, { ...ref, address: "10.0.0.2" }])).map((c) => c?.version)).toEqual([version, undefined]);
    expect(await overridden.listClaims(["n"], { contents: true })).toEqual([{ ref, stored: { claim, version } }]);
    expect(reads).toEqual(["10.0.0.1", "10.0.0.2", "10.0.0.1"]);
    // one overriding readClaims gets readClaim as a batch of one
    const batches: number[] = [];
    const batched = delegatingStore(memory, {
      readClaims: (refs) => {
        batches.push(refs.length);
        return memory.readClaims(refs);
      },
    });
    expect((await batched.readClaim(ref))?.version).toBe(version);
    expect(batches).toEqual([1]);
    // one overriding readPool gets listings with contents read through it
    const pools: string[] = [];
    await memory.writePool(pool, Pool.empty(parseCidr(pool.cidr)), undefined);
    const viaPool = delegatingStore(memory, {
      readPool: (r) => {
        pools.push(r.cidr);
        return memory.readPool(r);
      },
    });
    expect(await viaPool.listPools({ contents: true })).toHaveLength(1);
    expect(pools).toEqual([pool.cidr]);
  });
});
