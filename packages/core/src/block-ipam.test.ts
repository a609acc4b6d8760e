import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createNodeBlockIpam } from "./block-ipam.js";
import { delegatingStore } from "./complete-store.js";
import { InvalidRequestError, RangeExhaustedError } from "./errors.js";
import { cidrContains, formatIp, parseCidr } from "./ip.js";
import { IpamCache } from "./ipam-cache.js";
import { attachmentKey, formatKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { affinityClaimRef, blockLayout, blockRange } from "./node-blocks.js";
import { parseRange, type Range } from "./range.js";
import type { IpamStore } from "./store.js";

/** The memory store offering what etcd's does: entry-level commits and several claims read in one request. */
const ETCD_LIKE: MemoryStoreOptions = { transactions: true, entryWrites: true, batchReads: true };

const key = (id: string, ifName = "net1") => attachmentKey({ containerId: id, ifName });

/** Every stored reservation, read straight from the store: address → [pool, key]. */
async function holdings(store: IpamStore): Promise<{ address: string; pool: string; key: string }[]> {
  const out: { address: string; pool: string; key: string }[] = [];
  for (const ref of await store.listPools()) {
    const stored = await store.readPool(ref);
    const cidr = parseCidr(ref.cidr);
    for (const r of stored?.pool ?? []) {
      out.push({ address: formatIp({ family: cidr.family, value: cidr.network + r.offset }), pool: ref.cidr, key: formatKey(r.key) });
    }
  }
  return out;
}

/** The node whose affinity claim covers a block pool. */
async function ownerOf(store: IpamStore, network: string, range: Range, blockCidr: string): Promise<string | undefined> {
  const layout = blockLayout(range, 16);
  const block = blockRange(layout, (parseCidr(blockCidr).network - range.cidr.network) / 16n);
  if (block === undefined) return undefined;
  return (await store.readClaim(affinityClaimRef(network, block)))?.claim.key.containerId;
}

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

  /** The memory store, counting reads per pool; `onRead` runs after a read, before it is returned. */
  function countingStore(onRead?: (ref: { cidr: string }) => Promise<void>, options: MemoryStoreOptions = {}) {
    const inner = createMemoryStore(options);
    const reads: string[] = [];
    const store: IpamStore = new Proxy(inner, {
      get(target, property) {
        if (property !== "readPool") return Reflect.get(target, property, target);
        return async (ref: { network: string; cidr: string }) => {
          const stored = await target.readPool(ref);
          reads.push(ref.cidr);
          await onRead?.(ref);
          return stored;
        };
      },
    });
    return { inner, store, reads };
  }

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
