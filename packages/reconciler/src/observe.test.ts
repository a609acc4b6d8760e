import {
  attachmentKey,
  createIpam,
  createMemoryStore,
  delegatingStore,
  type IpamStore,
  type MemoryStoreOptions,
  type PoolRef,
  parseRange,
  poolId,
} from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { observePools } from "./observe.js";

const POOLS = 7;

/** POOLS pools of one reservation each (pod ns/pod-<i> at 10.<i>.0.1), in a memory store. */
async function pools(options: MemoryStoreOptions = {}): Promise<{ store: IpamStore; refs: PoolRef[] }> {
  const store = createMemoryStore(options);
  const ipam = createIpam({ store });
  for (let i = 0; i < POOLS; i++) {
    await ipam.allocate({
      network: "net",
      ranges: [parseRange({ range: `10.${i}.0.0/24` })],
      key: attachmentKey({ containerId: `sandbox-${i}`, ifName: "net1" }),
      podRef: `ns/pod-${i}`,
    });
  }
  return { store, refs: await store.listPools() };
}

/**
 * The store with slow pool reads: each read waits `delayMs(index in the listing)`; counts the most
 * reads in flight at once. Pools named in `broken` fail to read.
 */
function slowReads(store: IpamStore, refs: PoolRef[], delayMs: (i: number) => number, broken: ReadonlySet<string> = new Set()) {
  const seen = { inFlight: 0, most: 0 };
  const slow = delegatingStore(store, {
    async readPool(ref) {
      seen.inFlight++;
      seen.most = Math.max(seen.most, seen.inFlight);
      try {
        const i = refs.findIndex((r) => poolId(r) === poolId(ref));
        await new Promise((resolve) => setTimeout(resolve, delayMs(i)));
        if (broken.has(poolId(ref))) throw new Error(`${poolId(ref)} is corrupt`);
        return await store.readPool(ref);
      } finally {
        seen.inFlight--;
      }
    },
  });
  return { slow, seen };
}

describe("observePools", () => {
  it("reads the pools one at a time unless told otherwise, `concurrency` at a time when told", async () => {
    const { store, refs } = await pools();
    const one = slowReads(store, refs, () => 5);
    expect((await observePools(one.slow)).reservations).toHaveLength(POOLS);
    expect(one.seen.most).toBe(1);
    const three = slowReads(store, refs, () => 5);
    expect((await observePools(three.slow, { concurrency: 3 })).reservations).toHaveLength(POOLS);
    expect(three.seen.most).toBe(3);
  });

  it("lists the reservations in the pools' order, whatever order the reads finish in", async () => {
    const { store, refs } = await pools();
    // the first pool listed is read last
    const { slow } = slowReads(store, refs, (i) => (POOLS - i) * 4);
    const observation = await observePools(slow, { concurrency: POOLS });
    expect(observation.pools).toBe(POOLS);
    const expected = await observePools(store);
    expect(observation.reservations.map((o) => o.pool)).toEqual(refs);
    expect(observation.reservations).toEqual(expected.reservations);
  });

  it("reports an unreadable pool in its place and still reads the others", async () => {
    const { store, refs } = await pools();
    const bad = refs[2] as PoolRef;
    const { slow } = slowReads(store, refs, () => 1, new Set([poolId(bad)]));
    const observation = await observePools(slow, { concurrency: 4 });
    expect(observation.unreadable.map((u) => u.pool)).toEqual([bad]);
    expect(observation.unreadable[0]?.error.message).toContain("is corrupt");
    expect(observation.reservations.map((o) => o.pool)).toEqual(refs.filter((r) => r !== bad));
  });

  it("keeps only the named pods' reservations when given podRefs", async () => {
    const { store, refs } = await pools();
    const { slow } = slowReads(store, refs, () => 1);
    const observation = await observePools(slow, { concurrency: 4, podRefs: new Set(["ns/pod-1", "ns/pod-5"]) });
    expect(observation.reservations.map((o) => o.reservation.podRef)).toEqual(["ns/pod-1", "ns/pod-5"]);
    expect(observation.reservations.map((o) => o.address)).toEqual(["10.1.0.1", "10.5.0.1"]);
  });

  it("reads every pool in one scan where the store lists in bulk: no listing, no read each, the same observation", async () => {
    const { store, refs } = await pools({ bulkLists: true });
    const calls = { scan: 0, list: 0, read: 0 };
    const counted: IpamStore = delegatingStore(store, {
      listPools: ((options?: { contents?: boolean }) => {
        if (options?.contents === true) {
          calls.scan++;
          return store.listPools({ contents: true });
        }
        calls.list++;
        return store.listPools();
      }) as IpamStore["listPools"],
      readPool: (ref) => {
        calls.read++;
        return store.readPool(ref);
      },
    });
    const observation = await observePools(counted, { concurrency: 4 });
    expect(calls).toEqual({ scan: 1, list: 0, read: 0 });
    expect(observation.pools).toBe(POOLS);
    expect(observation.reservations.map((o) => o.pool)).toEqual(refs);
    expect([...observation.stored.keys()]).toEqual(refs.map(poolId));
    const oneByOne = await observePools(slowReads(store, refs, () => 0).slow);
    expect(observation.reservations).toEqual(oneByOne.reservations);
    expect(observation.stored).toEqual(oneByOne.stored);
  });

  it("reports a pool the scan could not read in its place, with the others", async () => {
    const { store, refs } = await pools({ bulkLists: true });
    const bad = refs[4] as PoolRef;
    const scanning = delegatingStore(store, {
      listPools: (async (options?: { contents?: boolean }) =>
        options?.contents === true
          ? (await store.listPools({ contents: true })).map((x) =>
              poolId(x.ref) === poolId(bad) ? { ref: x.ref, error: new Error("corrupt entry") } : x,
            )
          : store.listPools()) as IpamStore["listPools"],
    });
    const observation = await observePools(scanning);
    expect(observation.unreadable).toEqual([{ pool: bad, error: new Error("corrupt entry") }]);
    expect(observation.reservations.map((o) => o.pool)).toEqual(refs.filter((r) => r !== bad));
    expect(observation.stored.has(poolId(bad))).toBe(false);
  });
});
