import { createIpam, type Reservation } from "@ipamkit/core";
import { ipPoolName } from "@ipamkit/storage-kubernetes";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { reconcileOnce } from "../src/reconcile.js";
import { type Cluster, clusterTargets, range } from "./cluster.js";
import { GROUP, key, pool, reconcileFixtures } from "./reconcile-fixtures.js";

let cluster: Cluster;
const { createRawPool, holders } = reconcileFixtures(() => cluster);

/** Every ordering of three items. */
const permutations = <T>([a, b, c]: [T, T, T]): [T, T, T][] => [
  [a, b, c],
  [a, c, b],
  [b, a, c],
  [b, c, a],
  [c, a, b],
  [c, b, a],
];

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
  });
}
