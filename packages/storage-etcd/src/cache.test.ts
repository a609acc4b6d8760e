import { attachmentKey, IpamCache, type IpamStore, Pool, parseCidr, type Reservation, type StoreWrite } from "@ipamkit/core";
import fc from "fast-check";
import { expect, inject, it } from "vitest";
import { createEtcdStore } from "./index.js";

// The store caches pools per instance and refreshes them with only the keys changed since
// (tombstoned releases). After any sequence of changes by two instances, each instance's cached
// read must equal a fresh instance's full read. The second writer reads 2 keys per range request,
// so its full reads and refreshes span several pages (range-pages.ts).
const endpoint = inject("etcdEndpoint");
const cidr = parseCidr("10.80.0.0/28");
const ref = { network: "", cidr: cidr.text };
const res = (offset: number, id: string): Reservation => ({
  offset: BigInt(offset),
  key: attachmentKey({ containerId: id, ifName: "eth0" }),
  podRef: "ns/p",
});
const view = (p: Pool | undefined) => p?.reservations().map((r) => `${r.offset}:${r.key.containerId}`) ?? [];

it("cached reads always equal a fresh full read, whatever two writers did", async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          writer: fc.nat(1),
          op: fc.constantFrom("reserve", "unreserve", "rewrite"),
          offset: fc.integer({ min: 1, max: 14 }),
          id: fc.nat(5),
        }),
        { minLength: 1, maxLength: 25 },
      ),
      async (steps) => {
        const prefix = `/cache-prop/${process.pid}-${run++}/`;
        const writers = [
          createEtcdStore({ endpoints: [endpoint], prefix }),
          createEtcdStore({ endpoints: [endpoint], prefix, rangePageSize: 2 }),
        ];
        try {
          for (const step of steps) {
            const s = writers[step.writer] as (typeof writers)[number];
            const current = (await s.readPool(ref))?.pool;
            try {
              if (step.op === "reserve") {
                await s.commit?.([{ kind: "reserve", ref, reservation: res(step.offset, `c${step.id}`), lastOffset: BigInt(step.offset) }]);
              } else if (step.op === "unreserve") {
                const held = current?.atOffset(BigInt(step.offset));
                if (held !== undefined) await s.commit?.([{ kind: "unreserve", ref, reservation: held }]);
              } else {
                const stored = await s.readPool(ref);
                const base = stored?.pool ?? Pool.empty(cidr);
                const without = base.reservations().filter((r) => r.offset !== BigInt(step.offset) && r.key.containerId !== `c${step.id}`);
                await s.writePool(ref, Pool.fromReservations(cidr, [...without, res(step.offset, `c${step.id}`)]), stored?.version);
              }
            } catch (error) {
              if ((error as { code?: string }).code !== "STORE_CONFLICT") throw error;
            }
            const fresh = createEtcdStore({ endpoints: [endpoint], prefix });
            const truth = await fresh.readPool(ref);
            await fresh.close();
            for (const w of writers) {
              const cached = await w.readPool(ref);
              expect(view(cached?.pool)).toEqual(view(truth?.pool));
              expect(cached?.version).toBe(truth?.version);
              expect(cached?.pool.lastOffset).toBe(truth?.pool.lastOffset);
            }
          }
        } finally {
          await Promise.all(writers.map((w) => w.close()));
        }
      },
    ),
    { numRuns: Number(process.env.IPAMKIT_PROPERTY_RUNS ?? 40) },
  );
});

const commitOn = (s: IpamStore, writes: StoreWrite[]) => s.commit(writes);

it("core's IpamCache recalls the pool with its own entry steps folded in, without a read; a stale recall only costs a conflict", async () => {
  const prefix = `/cache-recall/${process.pid}/`;
  const cache = new IpamCache();
  const store = cache.watch(createEtcdStore({ endpoints: [endpoint], prefix }));
  const recall = (_: IpamStore) => cache.recall(ref);
  const other = createEtcdStore({ endpoints: [endpoint], prefix });
  const fresh = async () => {
    const reader = createEtcdStore({ endpoints: [endpoint], prefix });
    try {
      return await reader.readPool(ref);
    } finally {
      await reader.close();
    }
  };
  try {
    expect(recall(store)).toBeUndefined(); // nothing read yet
    await commitOn(store, [{ kind: "reserve", ref, reservation: res(1, "a"), lastOffset: 1n }]);
    await store.readPool(ref);
    const a2 = res(2, "b");
    await commitOn(store, [{ kind: "reserve", ref, reservation: a2, lastOffset: 2n }]);
    await commitOn(store, [{ kind: "unreserve", ref, reservation: res(1, "a") }]);
    // the released offset 1 is a tombstone now: reserving it again must compare the empty value
    await commitOn(store, [{ kind: "reserve", ref, reservation: res(1, "c"), lastOffset: 1n }]);
    const truth = await fresh();
    const recalled = recall(store);
    expect(view(recalled?.pool)).toEqual(view(truth?.pool));
    expect(view(recalled?.pool)).toEqual(["1:c", "2:b"]);
    expect(recalled?.pool.lastOffset).toBe(truth?.pool.lastOffset);
    // another instance writes: the recall is stale, and a reserve made from it conflicts
    await commitOn(other, [{ kind: "reserve", ref, reservation: res(3, "o"), lastOffset: 3n }]);
    const stale = recall(store);
    if (stale === undefined) throw new Error("nothing recalled");
    expect(view(stale.pool)).toEqual(["1:c", "2:b"]);
    await expect(commitOn(store, [{ kind: "reserve", ref, reservation: res(3, "d"), lastOffset: 3n }])).rejects.toMatchObject({
      code: "STORE_CONFLICT",
    });
    // a failed commit leaves the pool as last seen
    expect(recall(store)).toEqual(stale);
    // nor may a whole-pool write at the recalled version drop what the other instance wrote
    await expect(store.writePool(ref, stale.pool, stale.version)).rejects.toMatchObject({ code: "STORE_CONFLICT" });
    expect(view((await store.readPool(ref))?.pool)).toEqual(["1:c", "2:b", "3:o"]);
    // the other writes between this instance's read and its own step: the fold must not pass for current
    await commitOn(other, [{ kind: "reserve", ref, reservation: res(5, "o2"), lastOffset: 5n }]);
    await commitOn(store, [{ kind: "reserve", ref, reservation: res(6, "e"), lastOffset: 6n }]);
    const folded = recall(store);
    if (folded === undefined) throw new Error("nothing recalled");
    expect(view(folded.pool)).toEqual(["1:c", "2:b", "3:o", "6:e"]);
    await expect(store.writePool(ref, folded.pool, folded.version)).rejects.toMatchObject({ code: "STORE_CONFLICT" });
    expect(view((await fresh())?.pool)).toEqual(["1:c", "2:b", "3:o", "5:o2", "6:e"]);
  } finally {
    await Promise.all([store.close(), other.close()]);
  }
});
