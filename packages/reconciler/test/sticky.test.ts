import { attachmentKey, createIpam, formatIp, ipAt } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { reconcileOnce } from "../src/reconcile.js";
import { type Cluster, clusterTargets, freshClusterEach, range } from "./cluster.js";

// Sticky addresses and the reconciler (core DESIGN.md, "Sticky addresses"): a StatefulSet pod
// reborn under its name (new UID) while its old sandbox died with its node. Without sticky the
// reconciler frees the dead sandbox's address at once (reconcile.test.ts); with sticky it keeps it
// for the pod — the reborn pod's ADD takes it back — and frees it only after the keep time.

const key = (containerId: string) => attachmentKey({ containerId, ifName: "net1" });
const pool = { network: "", cidr: range.cidr.text };
const KEEP = 120;

for (const target of clusterTargets()) {
  describe(`sticky addresses and the reconciler on ${target.name}`, () => {
    let cluster: Cluster;
    freshClusterEach(target, (c) => {
      cluster = c;
    });
    const held = async () =>
      ((await cluster.store.readPool(pool))?.pool.reservations() ?? []).map(
        (r) => `${formatIp(ipAt(range.cidr, r.offset))} ${r.key.containerId}${r.releasedAt === undefined ? "" : " kept"}`,
      );

    it("reborn pod: kept for it (not freed), its ADD gets the address back; a pod gone for the keep time loses it", async () => {
      // the dead node's sandbox, an hour old, for the pod's previous UID
      await cluster.oldIpam.allocate({
        ranges: [range],
        key: key("sandbox-dead"),
        podRef: "ns/sts-0",
        podUid: "uid-of-the-dead-pod",
        sticky: KEEP,
      });
      await cluster.createPod({ name: "sts-0", phase: "Pending" });
      let clock = Date.now();
      const now = () => new Date(clock);
      const first = await reconcileOnce({ store: cluster.store, pods: cluster.pods, now });
      expect(first.failed).toEqual([]);
      expect(first.released.map((v) => v.reason)).toEqual(["pod-uid-changed"]);
      expect(first.released[0]?.detail).toMatch(/sticky: kept for ns\/sts-0 for 120 s/);
      expect(await held()).toEqual(["10.1.0.1 sandbox-dead kept"]);
      // within the keep time a pass keeps it
      clock += 60_000;
      const second = await reconcileOnce({ store: cluster.store, pods: cluster.pods, now });
      expect(second.released).toEqual([]);
      expect(second.kept["sticky-kept"]).toBe(1);
      // the reborn pod's ADD
      const ipam = createIpam({ store: cluster.store, now });
      const [a] = await ipam.allocate({ ranges: [range], key: key("sandbox-new"), podRef: "ns/sts-0", podUid: "uid-new", sticky: KEEP });
      expect(a && formatIp(a.address)).toBe("10.1.0.1");
      expect(await held()).toEqual(["10.1.0.1 sandbox-new"]);
      // the pod is deleted for good: kept for the keep time since first seen orphaned, then freed
      await cluster.deletePod("ns", "sts-0");
      clock = Date.now() + 3_600_000;
      expect((await reconcileOnce({ store: cluster.store, pods: cluster.pods, now })).released.map((v) => v.reason)).toEqual([
        "pod-missing",
      ]);
      expect(await held()).toEqual(["10.1.0.1 sandbox-new kept"]);
      clock += (KEEP - 1) * 1000;
      expect((await reconcileOnce({ store: cluster.store, pods: cluster.pods, now })).released).toEqual([]);
      clock += 1000;
      const last = await reconcileOnce({ store: cluster.store, pods: cluster.pods, now });
      expect(last.released.map((v) => v.reason)).toEqual(["sticky-expired"]);
      expect(await held()).toEqual([]);
    }, 60_000);
  });
}
