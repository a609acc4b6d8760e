import { attachmentKey, createIpam, delegatingStore, formatIp, parseRange, type Reservation } from "@ipamkit/core";
import { ipPoolName } from "@ipamkit/storage-kubernetes";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RELIST_MIN, RELIST_RATIO, reconcileOnce } from "../src/reconcile.js";
import { type Cluster, clusterTargets, POOL_NS, range, standIn } from "./cluster.js";

const key = (containerId: string) => attachmentKey({ containerId, ifName: "net1" });
const pool = { network: "", cidr: range.cidr.text };
const GROUP = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: POOL_NS };

let cluster: Cluster;

/** An IPPool written as Whereabouts (or anyone else) writes it, straight through the API. */
async function createRawPool(name: string, cidr: string, allocations: Record<string, unknown>): Promise<void> {
  await cluster.custom.createNamespacedCustomObject({
    ...GROUP,
    plural: "ippools",
    body: { apiVersion: "whereabouts.cni.cncf.io/v1alpha1", kind: "IPPool", metadata: { name }, spec: { range: cidr, allocations } },
  });
}

/** Every ordering of three items. */
const permutations = <T>([a, b, c]: [T, T, T]): [T, T, T][] => [
  [a, b, c],
  [a, c, b],
  [b, a, c],
  [b, c, a],
  [c, a, b],
  [c, b, a],
];

async function holders(): Promise<string[]> {
  const stored = await cluster.store.readPool(pool);
  return (stored?.pool.reservations() ?? []).map((r) => `${r.offset}:${r.key.containerId}`);
}

async function claimNames(): Promise<string[]> {
  const list = (await cluster.custom.listNamespacedCustomObject({ ...GROUP, plural: "overlappingrangeipreservations" })) as {
    items: { metadata: { name: string } }[];
  };
  return list.items.map((o) => o.metadata.name).sort();
}

/** The seed (whereabouts#176): ns/sts-0 lost its node, was reborn elsewhere with a new UID and a new IP. */
async function rebornStatefulSetPod(offsets: [number, number, number], withUids: boolean): Promise<void> {
  const [staleAt, liveAt, otherAt] = offsets;
  const newUid = await cluster.createPod({ name: "sts-0", net1: [`10.1.0.${liveAt}`] });
  const webUid = await cluster.createPod({ name: "web-1", net1: [`10.1.0.${otherAt}`] });
  const entries = [
    { at: staleAt, id: "sandbox-dead", podRef: "ns/sts-0", podUid: "uid-of-the-dead-pod" },
    { at: liveAt, id: "sandbox-new", podRef: "ns/sts-0", podUid: newUid },
    { at: otherAt, id: "sandbox-web", podRef: "ns/web-1", podUid: webUid },
  ];
  if (withUids) {
    for (const e of entries) {
      await cluster.oldIpam.allocate({
        ranges: [range],
        key: key(e.id),
        addresses: [`10.1.0.${e.at}`],
        podRef: e.podRef,
        podUid: e.podUid,
      });
    }
    return;
  }
  // Whereabouts' own format: no pod UID, no creation time; its reservations name no pool.
  const allocations = Object.fromEntries(entries.map((e) => [String(e.at), { id: e.id, podref: e.podRef, ifname: "net1" }]));
  await createRawPool(ipPoolName(pool), range.cidr.text, allocations);
  for (const e of entries) {
    await cluster.custom.createNamespacedCustomObject({
      ...GROUP,
      plural: "overlappingrangeipreservations",
      body: {
        apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
        kind: "OverlappingRangeIPReservation",
        metadata: { name: `10.1.0.${e.at}` },
        spec: { podref: e.podRef, ifname: "net1" },
      },
    });
  }
}

for (const target of clusterTargets()) {
  describe(`reconciler on ${target.name}`, () => {
    let host: Awaited<ReturnType<typeof target.open>>;
    beforeAll(async () => {
      host = await target.open();
    });
    afterAll(async () => {
      await host?.close();
    });
    beforeEach(async () => {
      cluster = await host.cluster();
    });
    afterEach(async () => {
      await cluster?.close();
    });

    describe("the seed scenario: a StatefulSet pod reborn under the same name", () => {
      for (const withUids of [true, false]) {
        const format = withUids ? "ipamkit pools (pod UIDs)" : "Whereabouts-format pools (no UID; liveness from network-status)";
        it(`${format}: only the stale reservation is released, for every stored order`, async () => {
          for (const offsets of permutations<number>([5, 6, 7])) {
            await cluster.close();
            cluster = await host.cluster();
            await rebornStatefulSetPod(offsets, withUids);
            const [staleAt, liveAt, otherAt] = offsets;
            const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods });
            expect(report.failed).toEqual([]);
            expect(report.released.map((v) => [v.observed.address, v.observed.reservation.key.containerId])).toEqual([
              [`10.1.0.${staleAt}`, "sandbox-dead"],
            ]);
            expect(report.released[0]?.reason).toBe(withUids ? "pod-uid-changed" : "ip-not-in-network-status");
            expect(await holders()).toEqual(
              [`${liveAt}:sandbox-new`, `${otherAt}:sandbox-web`].sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10)),
            );
            // the stale address's overlapping-range record went with it; the live ones stay
            expect(await claimNames()).toEqual([`10.1.0.${liveAt}`, `10.1.0.${otherAt}`].sort());
            // a second pass finds nothing more to do
            expect((await reconcileOnce({ store: cluster.store, pods: cluster.pods })).released).toEqual([]);
          }
        }, 120_000);
      }
    });

    describe("liveness rules", () => {
      it("Pending and unannotated pods keep their IPs; terminal, taint-evicted and missing pods lose theirs", async () => {
        const uids = {
          pending: await cluster.createPod({ name: "pending", phase: "Pending", net1: ["10.1.0.99"] }),
          bare: await cluster.createPod({ name: "bare" }),
          done: await cluster.createPod({ name: "done", phase: "Succeeded", net1: ["10.1.0.3"] }),
          failed: await cluster.createPod({ name: "failed", phase: "Failed" }),
          evicted: await cluster.createPod({ name: "evicted", net1: ["10.1.0.5"], evictedByTaintManager: true }),
          live: await cluster.createPod({ name: "live", net1: ["10.1.0.7"] }),
        };
        const owners: [string, string, string | undefined][] = [
          ["pending", "ns/pending", uids.pending],
          ["bare", "ns/bare", uids.bare],
          ["done", "ns/done", uids.done],
          ["failed", "ns/failed", uids.failed],
          ["evicted", "ns/evicted", uids.evicted],
          ["gone", "ns/gone", "uid-gone"],
          ["live", "ns/live", uids.live],
          ["anonymous", "", undefined],
        ];
        for (const [index, [id, podRef, podUid]] of owners.entries()) {
          await cluster.oldIpam.allocate({
            ranges: [range],
            key: key(id),
            addresses: [`10.1.0.${index + 1}`],
            ...(podRef === "" ? {} : { podRef }),
            ...(podUid === undefined ? {} : { podUid }),
          });
        }
        const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods });
        const released = Object.fromEntries(report.released.map((v) => [v.observed.reservation.key.containerId, v.reason]));
        expect(released).toEqual({ done: "pod-terminal", failed: "pod-terminal", evicted: "pod-evicted", gone: "pod-missing" });
        expect(report.kept).toMatchObject({ "pod-pending": 1, "no-network-status": 1, live: 1, "no-pod-ref": 1 });
        expect((await holders()).map((h) => h.split(":")[1])).toEqual(["pending", "bare", "live", "anonymous"]);
      });

      it("a reservation younger than the grace period is kept even when its pod is gone", async () => {
        const fresh = createIpam({ store: cluster.store });
        await fresh.allocate({ ranges: [range], key: key("young"), podRef: "ns/gone" });
        await cluster.oldIpam.allocate({ ranges: [range], key: key("old"), podRef: "ns/gone" });
        const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods, graceMs: 60_000 });
        expect(report.released.map((v) => v.observed.reservation.key.containerId)).toEqual(["old"]);
        expect(report.kept).toEqual({ "within-grace": 1 });
        const later = await reconcileOnce({
          store: cluster.store,
          pods: cluster.pods,
          graceMs: 60_000,
          now: () => new Date(Date.now() + 120_000),
        });
        expect(later.released.map((v) => v.observed.reservation.key.containerId)).toEqual(["young"]);
      });

      it("a dry run reports what it would release and why, and changes nothing", async () => {
        await cluster.oldIpam.allocate({ ranges: [range], key: key("orphan"), podRef: "ns/gone" });
        const before = await holders();
        const lines: Record<string, unknown>[] = [];
        const { default: pino } = await import("pino");
        const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
        const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods, dryRun: true, logger });
        expect(report.dryRun).toBe(true);
        expect(report.released.map((v) => v.reason)).toEqual(["pod-missing"]);
        expect(await holders()).toEqual(before);
        expect(lines).toEqual([
          expect.objectContaining({ msg: "would release (dry run)", address: "10.1.0.1", reason: "pod-missing", podRef: "ns/gone" }),
        ]);
      });

      it("a pod that appears between the pod list and the release keeps its IP (fresh read before release)", async () => {
        await cluster.oldIpam.allocate({ ranges: [range], key: key("late"), podRef: "ns/late" });
        const pods = {
          ...cluster.pods,
          list: async () => {
            const listed = await cluster.pods.list();
            // created after the list: the planner sees no pod, the fresh read does
            await cluster.createPod({ name: "late", net1: ["10.1.0.1"] });
            return listed;
          },
        };
        const report = await reconcileOnce({ store: cluster.store, pods });
        expect(report.released).toEqual([]);
        expect(report.skipped.map((s) => s.why)).toEqual(["pod-revalidated"]);
        expect(await holders()).toEqual(["1:late"]);
      });
    });

    describe("conditional release", () => {
      it("an ADD racing the reconciler never loses its IP", async () => {
        await cluster.oldIpam.allocate({ ranges: [range], key: key("dead"), podRef: "ns/gone" });
        await cluster.oldIpam.allocate({ ranges: [range], key: key("reused"), podRef: "ns/gone-too" });
        const adder = createIpam({ store: cluster.store });
        let raced: Reservation | undefined;
        const pods = {
          ...cluster.pods,
          // between planning and releasing: the orphan is released by a DEL and its address handed to a
          // new pod (lowest free), and the second key is re-created by a new ADD for a new owner
          get: async (namespace: string, name: string) => {
            if (raced === undefined) {
              await adder.release({ ranges: [range], key: key("dead") });
              await adder.release({ ranges: [range], key: key("reused") });
              [raced] = (await adder.allocate({ ranges: [range], key: key("newcomer"), podRef: "ns/newcomer" })).map((a) => a.reservation);
              await adder.allocate({ ranges: [range], key: key("reused"), podRef: "ns/gone-too", podUid: "new-owner" });
            }
            return cluster.pods.get(namespace, name);
          },
        };
        const report = await reconcileOnce({ store: cluster.store, pods });
        expect(report.released).toEqual([]);
        expect(report.skipped.map((s) => s.why).sort()).toEqual(["absent", "changed"]);
        expect(raced?.offset).toBe(1n);
        expect(await holders()).toEqual(["1:newcomer", "2:reused"]);
      });

      it("a targeted pass touches only the named pods' reservations", async () => {
        await cluster.oldIpam.allocate({ ranges: [range], key: key("a"), podRef: "ns/a" });
        await cluster.oldIpam.allocate({ ranges: [range], key: key("b"), podRef: "ns/b" });
        const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods, podRefs: new Set(["ns/b"]) });
        expect(report.reservations).toBe(1);
        expect(report.released.map((v) => v.observed.reservation.key.containerId)).toEqual(["b"]);
        expect(await holders()).toEqual(["1:a"]);
      });
    });

    describe("concurrency", () => {
      it("releases several pools at once (one at a time with concurrency 1), reporting in pool order either way", async () => {
        const ranges = [0, 1, 2, 3].map((n) => parseRange({ range: `10.3.${n}.0/24` }));
        const released: Record<number, string[]> = {};
        for (const concurrency of [1, 8]) {
          for (const [n, r] of ranges.entries())
            for (const id of ["x", "y"]) await cluster.oldIpam.allocate({ ranges: [r], key: key(`${id}${n}`), podRef: `ns/gone-${n}` });
          let inFlight = 0;
          let most = 0;
          // with concurrency, each pool's write waits (5 s at most) until every pool's write has arrived
          let arrived = () => {};
          const everyPool = new Promise<void>((resolve) => (arrived = resolve));
          const store = delegatingStore(cluster.store, {
            writePool: async (ref, p, expected) => {
              most = Math.max(most, ++inFlight);
              if (most === ranges.length) arrived();
              if (concurrency > 1) await Promise.race([everyPool, new Promise((r) => setTimeout(r, 5000))]);
              try {
                return await cluster.store.writePool(ref, p, expected);
              } finally {
                inFlight--;
              }
            },
          });
          const report = await reconcileOnce({ store, pods: cluster.pods, concurrency });
          expect(report.failed).toEqual([]);
          released[concurrency] = report.released.map((v) => v.observed.reservation.key.containerId);
          expect(most).toBe(concurrency === 1 ? 1 : ranges.length);
        }
        expect(released[8]).toEqual(released[1]);
        expect(released[1]).toEqual(["x0", "y0", "x1", "y1", "x2", "y2", "x3", "y3"]);
        for (const concurrency of [0, 1.5, Number.NaN])
          await expect(reconcileOnce({ store: cluster.store, pods: cluster.pods, concurrency })).rejects.toMatchObject({
            code: "INVALID_REQUEST",
          });
      });
    });

    describe("re-reading orphans' pods", () => {
      /** `count` orphans of `count` pods that do not exist; the pod source counts its calls, and its second list sees `late` created. */
      async function orphansOf(count: number, late?: number) {
        const addresses: string[] = [];
        for (let i = 0; i < count; i++) {
          const [assigned] = await cluster.oldIpam.allocate({ ranges: [range], key: key(`c${i}`), podRef: `ns/gone-${i}` });
          addresses.push(assigned === undefined ? "" : formatIp(assigned.address));
        }
        const calls = { list: 0, get: 0 };
        const pods = {
          ...cluster.pods,
          list: async () => {
            calls.list++;
            if (calls.list === 2 && late !== undefined) await cluster.createPod({ name: `gone-${late}`, net1: [addresses[late] ?? ""] });
            return cluster.pods.list();
          },
          get: (namespace: string, name: string) => {
            calls.get++;
            return cluster.pods.get(namespace, name);
          },
        };
        return { pods, calls };
      }

      it(`many (${RELIST_MIN} or more, and 1/${RELIST_RATIO} of the pods listed): one fresh list instead of a GET each, and a pod it finds keeps its IP`, async () => {
        const { pods, calls } = await orphansOf(RELIST_MIN + 3, 7);
        const report = await reconcileOnce({ store: cluster.store, pods });
        expect(calls).toEqual({ list: 2, get: 0 });
        expect(report.failed).toEqual([]);
        expect(report.skipped.map((s) => [s.verdict.observed.reservation.podRef, s.why])).toEqual([["ns/gone-7", "pod-revalidated"]]);
        expect(report.released).toHaveLength(RELIST_MIN + 2);
        expect(await holders()).toEqual(["8:c7"]);
      });

      it("few: a GET each", async () => {
        const { pods, calls } = await orphansOf(3);
        const report = await reconcileOnce({ store: cluster.store, pods });
        expect(calls).toEqual({ list: 1, get: 3 });
        expect(report.released).toHaveLength(3);
      });

      it("a failed fresh list is reported for each orphan, and nothing is released", async () => {
        const { pods } = await orphansOf(RELIST_MIN);
        let lists = 0;
        const failing = {
          ...pods,
          list: async () => {
            if (++lists === 2) throw new Error("the API server went away");
            return pods.list();
          },
        };
        const before = await holders();
        const report = await reconcileOnce({ store: cluster.store, pods: failing });
        expect(report.released).toEqual([]);
        expect(report.failed).toHaveLength(RELIST_MIN);
        expect(new Set(report.failed.map((f) => f.error.message))).toEqual(new Set(["the API server went away"]));
        expect(await holders()).toEqual(before);
      });
    });

    describe("failures", () => {
      it("an unreadable pool is reported and left alone; the others are reconciled", async () => {
        await cluster.oldIpam.allocate({ ranges: [range], key: key("orphan"), podRef: "ns/gone" });
        await createRawPool("10.2.0.0-24", "10.2.0.0/24", { "not-a-number": { id: "x", podref: "ns/gone", ifname: "net1" } });
        const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods });
        expect(report.failed.map((f) => [f.subject, f.error.name])).toEqual([["pool 10.2.0.0/24", "StoreCorruptError"]]);
        expect(report.released.map((v) => v.observed.reservation.key.containerId)).toEqual(["orphan"]);
      });

      // fault injection needs the stand-in; a real kube-apiserver cannot fail on demand
      if (target.faults)
        it("an API server that fails the pod list fails the pass before anything is released", async () => {
          await cluster.oldIpam.allocate({ ranges: [range], key: key("orphan"), podRef: "ns/gone" });
          standIn(cluster).failNext({ method: "GET", pathPrefix: "/api/v1/pods", status: 503, times: 1 });
          await expect(reconcileOnce({ store: cluster.store, pods: cluster.pods })).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
          expect(await holders()).toEqual(["1:orphan"]);
        });
    });
  });
}
