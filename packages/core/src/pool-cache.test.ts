import { describe, expect, it } from "vitest";
import { StoreConflictError } from "./errors.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { Pool } from "./pool.js";
import { PoolCache } from "./pool-cache.js";

const ref = { network: "", cidr: "10.0.0.0/28" };
const empty = Pool.empty(parseCidr(ref.cidr));
const reservation = (offset: bigint, id: string) => ({ offset, key: attachmentKey({ containerId: id, ifName: "net1" }) });
const ids = (p: Pool | undefined) => p?.reservations().map((r) => `${r.offset}:${r.key.containerId}`);

describe("PoolCache", () => {
  it("recalls a pool as this process last read or wrote it, without a request; stale once another writes", async () => {
    const shared = createMemoryStore();
    const cache = new PoolCache();
    const store = cache.watch(shared);
    expect(cache.recall(ref)).toBeUndefined();
    const v1 = await store.writePool(ref, empty, undefined);
    expect(cache.recall(ref)).toEqual({ pool: empty, version: v1 });
    const other = empty.with(reservation(3n, "o"));
    const v2 = await shared.writePool(ref, other, v1);
    expect(cache.recall(ref)?.version).toBe(v1); // stale: a write at it conflicts
    await expect(store.writePool(ref, empty.with(reservation(4n, "a")), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect(cache.recall(ref)).toBeUndefined(); // forgotten on the failed write
    expect((await store.readPool(ref))?.version).toBe(v2);
    expect(cache.recall(ref)?.version).toBe(v2);
  });

  it("remembers a committed pool step; folds its own entry-level steps in at the version last read", async () => {
    const cache = new PoolCache();
    const store = cache.watch(createMemoryStore({ entryWrites: true }));
    const [version] = await store.commit([{ kind: "pool", ref, pool: empty, expected: undefined }]);
    expect(cache.recall(ref)).toEqual({ pool: empty, version });
    await store.commit([{ kind: "reserve", ref, reservation: reservation(2n, "a"), lastOffset: 2n }]);
    await store.commit([{ kind: "reserve", ref, reservation: reservation(3n, "b"), lastOffset: 3n }]);
    await store.commit([{ kind: "unreserve", ref, reservation: reservation(2n, "a") }]);
    const recalled = cache.recall(ref);
    expect(ids(recalled?.pool)).toEqual(["3:b"]);
    expect(recalled?.pool.lastOffset).toBe(3n);
    // the version is the one last read: a whole-pool write at it conflicts, nothing is lost
    expect(recalled?.version).toBe(version);
    await expect(store.writePool(ref, empty, recalled?.version)).rejects.toBeInstanceOf(StoreConflictError);
    expect(ids((await store.readPool(ref))?.pool)).toEqual(["3:b"]);
    // a failed commit leaves the pool as last seen
    const seen = cache.recall(ref);
    await expect(store.commit([{ kind: "unreserve", ref, reservation: reservation(9n, "x") }])).rejects.toBeInstanceOf(StoreConflictError);
    expect(cache.recall(ref)).toEqual(seen);
  });

  it("forgets the oldest pools beyond its limit", async () => {
    const cache = new PoolCache({ limit: 1 });
    const store = cache.watch(createMemoryStore());
    const second = { network: "", cidr: "10.0.1.0/28" };
    await store.writePool(ref, empty, undefined);
    await store.writePool(second, Pool.empty(parseCidr(second.cidr)), undefined);
    expect(cache.recall(ref)).toBeUndefined();
    expect(cache.recall(second)).toBeDefined();
  });
});
