import { afterAll, expect, it } from "vitest";
import { openSimStore, startCluster } from "./cluster.js";
import { reconcilerFor } from "./reconciler-run.js";
import { runScenario } from "./scenario.js";
import { ipamkitIpam, whereaboutsIpam } from "./sim-ipam.js";
import { startNativeSpawner } from "./spawner.js";

// `pnpm sim --ipam ipamkit,whereabouts` in a bounded form: on one real kube-apiserver, ipamkit's
// phases and then Whereabouts v0.9.2's own binary (test-infra/whereabouts builds it) with the same
// pods and networks; the independent audit finds nothing wrong with either, and each IPAM's
// requests are the server's own count (Whereabouts' Lease among them, ipamkit takes none).
const spawner = startNativeSpawner();
afterAll(() => spawner.close());

it("ipamkit, then Whereabouts' binary on the same kube-apiserver and pods: nothing held twice, lost or leaked", async () => {
  const cluster = await startCluster("kube-apiserver", 4, { spawner, nodeBlockSize: 8 });
  const store = await openSimStore(cluster);
  try {
    await cluster.startAgents(4);
    const reconcile = reconcilerFor("program", cluster, store);
    const options = { pods: 16, networks: 2, concurrency: 8, reconcile };
    const ours = await runScenario(cluster, { ...options, ipam: ipamkitIpam(cluster) });
    const theirs = await runScenario(cluster, { ...options, ipam: whereaboutsIpam(cluster), powerCycle: false });
    expect(ours.map((r) => r.phase)).toEqual([
      "create all",
      "delete all and re-create",
      "power-cycle every node, then reconcile",
      "delete all",
    ]);
    expect(theirs.map((r) => r.phase)).toEqual(["create all", "delete all and re-create", "delete all"]);
    for (const r of [...ours, ...theirs]) {
      expect(r.failed, r.phase).toBe(0);
      expect(r.audit, r.phase).toEqual({ heldTwice: 0, lost: 0, leaked: 0 });
    }
    // Whereabouts' calls went to its binary: its Lease is in its requests, and none in ipamkit's ADDs
    const leases = (requests: Record<string, number> | undefined) =>
      Object.entries(requests ?? {})
        .filter(([key]) => key.endsWith(" leases"))
        .reduce((n, [, m]) => n + m, 0);
    expect(leases(theirs[0]?.steps?.ADD?.requests)).toBeGreaterThanOrEqual(32);
    expect(leases(ours[1]?.steps?.ADD?.requests)).toBeLessThan(32);
    expect(theirs[1]?.steps?.DEL?.calls).toBe(32);
  } finally {
    await store.close();
    await cluster.close();
  }
});

it("refuses Whereabouts on a store other than the real kube-apiserver", async () => {
  const cluster = await startCluster("kubernetes", 1, { spawner });
  try {
    expect(() => whereaboutsIpam(cluster)).toThrow(/real kube-apiserver/);
  } finally {
    await cluster.close();
  }
});
