import { describe, expect, it } from "vitest";
import { withAffinityCache } from "./affinity-cache.js";
import { StoreConflictError } from "./errors.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { withOwnClaimMemory } from "./own-claims.js";
import { Pool } from "./pool.js";
import { withPoolRecall } from "./pool-recall.js";

const ref = { network: "", cidr: "10.0.0.0/28" };
const empty = Pool.empty(parseCidr(ref.cidr));
const reservation = (offset: bigint, id: string) => ({ offset, key: attachmentKey({ containerId: id, ifName: "net1" }) });

describe("withPoolRecall", () => {
  it("recalls a pool as this process last read or wrote it, without a request; stale once another writes", async () => {
    const shared = createMemoryStore();
    const store = withPoolRecall(shared);
    expect(store.recallPool?.(ref)).toBeUndefined();
    const v1 = await store.writePool(ref, empty, undefined);
    expect(store.recallPool?.(ref)).toEqual({ pool: empty, version: v1 });
    const other = empty.with(reservation(3n, "o"));
    const v2 = await shared.writePool(ref, other, v1);
    expect(store.recallPool?.(ref)?.version).toBe(v1); // stale: a write at it conflicts
    await expect(store.writePool(ref, empty.with(reservation(4n, "a")), v1)).rejects.toBeInstanceOf(StoreConflictError);
    expect(store.recallPool?.(ref)).toBeUndefined(); // forgotten on the failed write
    expect((await store.readPool(ref))?.version).toBe(v2);
    expect(store.recallPool?.(ref)?.version).toBe(v2);
  });

  it("remembers a committed pool step, forgets a pool changed by an entry-level step", async () => {
    const store = withPoolRecall(createMemoryStore({ atomicCommit: true, entryWrites: true }));
    const [version] = await (store.commit?.([{ kind: "pool", ref, pool: empty, expected: undefined }]) ?? []);
    expect(store.recallPool?.(ref)).toEqual({ pool: empty, version });
    await store.commit?.([{ kind: "reserve", ref, reservation: reservation(2n, "a"), lastOffset: 2n }]);
    expect(store.recallPool?.(ref)).toBeUndefined();
  });

  it("returns a store that recalls its own pools unchanged (and the other wrappers pass recallPool through)", async () => {
    const native = withPoolRecall(createMemoryStore());
    expect(withPoolRecall(native)).toBe(native);
    await native.writePool(ref, empty, undefined);
    const wrapped = withPoolRecall(withOwnClaimMemory(withAffinityCache(native)));
    expect(wrapped.recallPool?.(ref)?.pool).toBe(empty);
  });

  it("forgets the oldest pools beyond its limit", async () => {
    const store = withPoolRecall(createMemoryStore(), { limit: 1 });
    const second = { network: "", cidr: "10.0.1.0/28" };
    await store.writePool(ref, empty, undefined);
    await store.writePool(second, Pool.empty(parseCidr(second.cidr)), undefined);
    expect(store.recallPool?.(ref)).toBeUndefined();
    expect(store.recallPool?.(second)).toBeDefined();
  });
});
