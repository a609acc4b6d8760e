import {
  attachmentKey,
  createIpam,
  createMemoryStore,
  delegatingStore,
  type IpamStore,
  type PodFacts,
  parseRange,
  poolId,
} from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import type { PodSource } from "./ports.js";
import { reconcileOnce } from "./reconcile.js";

const POOLS = 3;
const range = (i: number) => parseRange({ range: `10.${i}.0.0/24` });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });

const pod = (name: string, uid: string): PodFacts => ({ namespace: "ns", name, uid, phase: "Running", evictedByTaintManager: false });

/** Pods as listed; `onList` runs when the pass lists them, i.e. after it observed the pools. */
function podSource(pods: PodFacts[], onList: () => Promise<void> = async () => {}): PodSource {
  const byRef = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  return {
    async list() {
      await onList();
      return new Map(byRef);
    },
    get: async (namespace, name) => byRef.get(`${namespace}/${name}`),
    close() {},
  };
}

/** The store, counting pool reads and writes (commits included) by pool. */
function counting(store: IpamStore) {
  const reads = new Map<string, number>();
  const writes = { count: 0 };
  const bump = (id: string) => reads.set(id, (reads.get(id) ?? 0) + 1);
  const counted = delegatingStore(store, {
    readPool(ref) {
      bump(poolId(ref));
      return store.readPool(ref);
    },
    writePool(ref, pool, expected) {
      writes.count++;
      return store.writePool(ref, pool, expected);
    },
    ...(store.commit === undefined
      ? {}
      : {
          commit: (steps) => {
            writes.count++;
            return (store.commit as NonNullable<IpamStore["commit"]>).call(store, steps);
          },
        }),
  });
  return { counted, reads, writes };
}

/** Each pool: a live pod's reservation and a dead pod's (its pod gone). */
async function seed(store: IpamStore): Promise<PodFacts[]> {
  const ipam = createIpam({ store });
  const live: PodFacts[] = [];
  for (let i = 0; i < POOLS; i++) {
    await ipam.allocate({ network: "n", ranges: [range(i)], key: key(`live-${i}`), podRef: `ns/live-${i}`, podUid: `uid-live-${i}` });
    await ipam.allocate({ network: "n", ranges: [range(i)], key: key(`dead-${i}`), podRef: `ns/dead-${i}`, podUid: `uid-dead-${i}` });
    live.push(pod(`live-${i}`, `uid-live-${i}`));
  }
  return live;
}

const holders = async (store: IpamStore, i: number) =>
  ((await store.readPool({ network: "n", cidr: range(i).cidr.text }))?.pool.reservations() ?? []).map((r) => r.key.containerId).sort();

/** How often pool 1 is read when something else was placed in it meanwhile: a whole-pool write conflicts, an entry-level one does not. */
describe.each([
  ["pool-level writes", {}, 2],
  ["entry-level commits (like etcd)", { transactions: true, entryWrites: true }, 1],
])("reconcileOnce on a memory store with %s", (_label, storeOptions, pool1Reads) => {
  it("releases each pool's orphans starting from the pool as observed: one read per pool in all", async () => {
    const store = createMemoryStore(storeOptions);
    const pods = await seed(store);
    const { counted, reads, writes } = counting(store);
    const report = await reconcileOnce({ store: counted, pods: podSource(pods), graceMs: 0, overlappingRanges: false });
    expect(report.released.map((v) => v.observed.reservation.key.containerId).sort()).toEqual(["dead-0", "dead-1", "dead-2"]);
    expect([...reads.values()]).toEqual(Array(POOLS).fill(1));
    expect(writes.count).toBe(POOLS);
    for (let i = 0; i < POOLS; i++) expect(await holders(store, i)).toEqual([`live-${i}`]);
  });

  it("a pool changed after it was observed: the write conflicts, the pool is read afresh, and only what is unchanged goes", async () => {
    const store = createMemoryStore(storeOptions);
    const pods = await seed(store);
    const { counted, reads } = counting(store);
    // a minute later: dead-2 placed again has another createdAt than the one observed
    const ipam = createIpam({ store, now: () => new Date(Date.now() + 60_000) });
    const changed = range(1);
    // between the observation and the releases: a new attachment in pool 1, and dead-2 released and placed again
    const meanwhile = async () => {
      await ipam.allocate({ network: "n", ranges: [changed], key: key("newcomer"), podRef: "ns/newcomer", podUid: "uid-new" });
      await ipam.release({ network: "n", ranges: [range(2)], key: key("dead-2") });
      await ipam.allocate({ network: "n", ranges: [range(2)], key: key("dead-2"), podRef: "ns/dead-2", podUid: "uid-dead-2" });
    };
    const report = await reconcileOnce({
      store: counted,
      pods: podSource([...pods, pod("newcomer", "uid-new")], meanwhile),
      graceMs: 0,
      overlappingRanges: false,
    });
    expect(report.failed).toEqual([]);
    expect(report.released.map((v) => v.observed.reservation.key.containerId).sort()).toEqual(["dead-0", "dead-1"]);
    // dead-2 was placed again after it was observed (a new createdAt): changed, so kept
    expect(report.skipped.map((s) => [s.verdict.observed.reservation.key.containerId, s.why])).toEqual([["dead-2", "changed"]]);
    expect(await holders(store, 0)).toEqual(["live-0"]);
    expect(await holders(store, 1)).toEqual(["live-1", "newcomer"]);
    expect(await holders(store, 2)).toEqual(["dead-2", "live-2"]);
    // a pool is read again only where its stale hand-off conflicted: never pool 0; pool 1 where a
    // write covers the whole pool; pool 2 always (dead-2's own entry changed)
    expect(reads.get(poolId({ network: "n", cidr: range(0).cidr.text }))).toBe(1);
    expect(reads.get(poolId({ network: "n", cidr: changed.cidr.text }))).toBe(pool1Reads);
    expect(reads.get(poolId({ network: "n", cidr: range(2).cidr.text }))).toBe(2);
  });
});
