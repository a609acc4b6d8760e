import { delegatingStore, formatIp, parseRange } from "@ipamkit/core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RELIST_MIN, RELIST_RATIO, reconcileOnce } from "../src/reconcile.js";
import { type Cluster, clusterTargets, range, standIn } from "./cluster.js";
import { key, reconcileFixtures } from "./reconcile-fixtures.js";

let cluster: Cluster;
const { createRawPool, holders } = reconcileFixtures(() => cluster);

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
