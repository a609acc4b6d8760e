import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ETCD_LIKE, holdings, key, ownerOf } from "./block-ipam.fixtures.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { delegatingStore } from "./complete-store.js";
import { InvalidRequestError, RangeExhaustedError } from "./errors.js";
import { cidrContains, formatIp, parseCidr } from "./ip.js";
import { IpamCache } from "./ipam-cache.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { parseRange } from "./range.js";
import type { IpamStore } from "./store.js";

// The reads a call makes (pool recall, stale reads, blocks left behind) are in block-ipam.recall.test.ts.

describe("per-node blocks", () => {
  const range = parseRange({ range: "10.0.0.0/24", gateway: "10.0.0.1" });

  it("serves each node from blocks it claimed, answering with the configured range's prefix", async () => {
    const store = createMemoryStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    const b = createNodeBlockIpam({ store, node: "node-b", blockSize: 16 });
    for (let i = 0; i < 20; i++) {
      const [got] = await (i % 2 === 0 ? a : b).allocate({ ranges: [range], key: key(`c${i}`) });
      expect(got?.range).toBe(range);
      expect(got?.range.cidr.prefix).toBe(24);
    }
    const held = await holdings(store);
    expect(held).toHaveLength(20);
    expect(new Set(held.map((h) => h.address)).size).toBe(20);
    for (const h of held) {
      const node = Number(h.key.slice(1, h.key.indexOf("/"))) % 2 === 0 ? "node-a" : "node-b";
      expect(await ownerOf(store, "", range, h.pool)).toBe(node);
      expect(h.pool).toMatch(/\/28$/);
    }
  });

  it("is idempotent per key, and releases and looks up by exact key", async () => {
    const store = createMemoryStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    const [first] = await a.allocate({ ranges: [range], key: key("c1") });
    const [again] = await a.allocate({ ranges: [range], key: key("c1") });
    expect(again?.reused).toBe(true);
    expect(again?.address).toEqual(first?.address);
    await a.allocate({ ranges: [range], key: key("c1", "net2") });
    const [found] = await a.lookup({ ranges: [range], key: key("c1") });
    expect(found?.address).toEqual(first?.address);
    expect(await a.release({ ranges: [range], key: key("c9") })).toEqual([]);
    const released = await a.release({ ranges: [range], key: key("c1") });
    expect(released.map((r) => r.address)).toEqual([first?.address]);
    expect((await holdings(store)).map((h) => h.key)).toEqual(["c1/net2"]);
    expect(await a.lookup({ ranges: [range], key: key("c1") })).toEqual([undefined]);
  });

  it("claims the next block when its blocks are full, borrows once none is left, then reports exhaustion", async () => {
    const small = parseRange({ range: "10.0.0.0/27" }); // two blocks of 16: .1-.15 and .16-.30
    const store = createMemoryStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    const b = createNodeBlockIpam({ store, node: "node-b", blockSize: 16 });
    await b.allocate({ ranges: [small], key: key("b0") });
    for (let i = 0; i < 15; i++) await a.allocate({ ranges: [small], key: key(`a${i}`) });
    expect(await a.hasRoom(undefined, small)).toBe(true); // b's block still has room: borrowable
    for (let i = 15; i < 29; i++) await a.allocate({ ranges: [small], key: key(`a${i}`) }); // 14 borrowed in b's block
    await expect(a.allocate({ ranges: [small], key: key("a29") })).rejects.toBeInstanceOf(RangeExhaustedError);
    expect(await a.hasRoom(undefined, small)).toBe(false);
    const held = await holdings(store);
    expect(new Set(held.map((h) => h.address)).size).toBe(30);
    const [borrowed] = await a.lookup({ ranges: [small], key: key("a20") });
    expect(await ownerOf(store, "", small, borrowed?.pool.cidr ?? "")).toBe("node-b");
    expect((await a.release({ ranges: [small], key: key("a20") })).length).toBe(1);
    await a.allocate({ ranges: [small], key: key("a29") });
  });

  it("makes a multi-range ADD all-or-nothing", async () => {
    const store = createMemoryStore();
    const tiny = parseRange({ range: "10.9.0.0/29", range_end: "10.9.0.2" }); // blocks of 4: .1-.2 usable only
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 4 });
    await a.allocate({ ranges: [tiny], key: key("x1") });
    await a.allocate({ ranges: [tiny], key: key("x2") });
    await expect(a.allocate({ ranges: [range, tiny], key: key("x3") })).rejects.toBeInstanceOf(RangeExhaustedError);
    expect((await holdings(store)).map((h) => h.key).sort()).toEqual(["x1/net1", "x2/net1"]);
  });

  it("refuses requested addresses and bad node names with typed errors", async () => {
    const store = createMemoryStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    await expect(a.allocate({ ranges: [range], key: key("c1"), addresses: ["10.0.0.5"] })).rejects.toBeInstanceOf(InvalidRequestError);
    expect(() => createNodeBlockIpam({ store, node: "bad/name", blockSize: 16 })).toThrow(/containerId/);
    expect(await holdings(store)).toEqual([]);
  });

  it("lists a range's block pools for node-local GC", async () => {
    const store = createMemoryStore();
    const a = createNodeBlockIpam({ store, node: "node-a", blockSize: 16 });
    const other = parseRange({ range: "10.1.0.0/24" });
    await a.allocate({ ranges: [range, other], key: key("c1") });
    const pools = await a.blockPools(undefined, range);
    expect(pools).toHaveLength(1);
    expect(cidrContains(range.cidr, { family: 4, value: parseCidr(pools[0]?.ref.cidr ?? "").network })).toBe(true);
  });

  /** How a node's process remembers: not at all, or as the agent (an IpamCache of its own: claims, own claims and pools). */
  type NodeProcess = "plain" | "agent";
  const cacheOf = (kind: NodeProcess): { cache?: IpamCache } => (kind === "plain" ? {} : { cache: new IpamCache() });

  it.each<[string, NodeProcess, MemoryStoreOptions]>([
    ["", "plain", {}],
    [", each node recalling its pools and remembering its claims (as the agent)", "agent", {}],
    [", entry-level commits (like etcd), each node as the agent", "agent", { transactions: true, entryWrites: true }],
    [", etcd-like, each node as the agent", "agent", ETCD_LIKE],
  ])(
    "never holds an address twice nor loses a reservation under concurrent nodes (random interleavings)%s",
    async (_name, kind, storeOptions) => {
      const small = parseRange({ range: "10.0.0.0/28", exclude: ["10.0.0.4/31"] }); // 4 blocks, 11 addresses: fills, borrows
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ node: fc.integer({ min: 0, max: 3 }), k: fc.nat(6), del: fc.boolean(), direct: fc.boolean() }), {
            minLength: 20,
            maxLength: 80,
          }),
          fc.scheduler(),
          async (ops, s) => {
            const store = createMemoryStore(storeOptions);
            const wrap = <T>(label: string, p: Promise<T>) => s.schedule(p, label);
            const scheduled: IpamStore = delegatingStore(store, {
              readPool: (r) => wrap("readPool", store.readPool(r)),
              writePool: (r, p, v) => wrap("writePool", store.writePool(r, p, v)),
              readClaim: (r) => wrap("readClaim", store.readClaim(r)),
              readClaims: (refs) => wrap("readClaims", store.readClaims(refs)),
              writeClaim: (r, c, v) => wrap("writeClaim", store.writeClaim(r, c, v)),
              commit: (writes) => wrap("commit", store.commit(writes)),
            });
            const nodes = [0, 1, 2, 3].map((n) =>
              createNodeBlockIpam({
                store: scheduled,
                ...cacheOf(kind),
                node: `n${n}`,
                blockSize: 4,
                retry: { baseDelayMs: 0 },
              }),
            );
            // With the agent, some of a key's calls go to a second, plain process of the same node (the
            // binary in direct mode, the reconciler): the agent's recalled pools then miss what is
            // placed and released behind its back.
            const direct = [0, 1, 2, 3].map((n) =>
              createNodeBlockIpam({ store: scheduled, node: `n${n}`, blockSize: 4, retry: { baseDelayMs: 0 } }),
            );
            const viaDirect = (op: (typeof ops)[number]) => op.direct && kind === "agent";
            // Keys are per node (an attachment lives on one node); a key's ops run in order.
            const model = new Map<string, string>();
            const byKey = new Map<string, typeof ops>();
            for (const op of ops) byKey.set(`${op.node}-${op.k}`, [...(byKey.get(`${op.node}-${op.k}`) ?? []), op]);
            const runs = [...byKey.entries()].map(async ([id, list]) => {
              for (const op of list) {
                const ipam = (viaDirect(op) ? direct[op.node] : nodes[op.node]) ?? nodes[0];
                if (ipam === undefined) return;
                if (op.del) {
                  await ipam.release({ ranges: [small], key: key(id) });
                  model.delete(id);
                } else {
                  const [got] = await ipam.allocate({ ranges: [small], key: key(id) }).catch((error: unknown) => {
                    if (error instanceof RangeExhaustedError) return [undefined];
                    throw error;
                  });
                  if (got !== undefined) {
                    const text = formatIp(got.address);
                    if (model.has(id)) expect(text).toBe(model.get(id));
                    model.set(id, text);
                  }
                }
              }
            });
            await s.waitFor(Promise.all(runs));
            const held = await holdings(store);
            expect(new Set(held.map((h) => h.address)).size).toBe(held.length);
            // one reservation per key the model holds: none twice (an ADD that missed its own key)
            expect(held).toHaveLength(model.size);
            expect(new Map(held.map((h) => [h.key.slice(0, h.key.indexOf("/")), h.address]))).toEqual(model);
          },
        ),
        { numRuns: 60 },
      );
    },
  );
});
