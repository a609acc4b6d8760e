import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Cluster, startCluster } from "./cluster.js";
import { checkCluster, netnsAddresses } from "./cluster-checks.js";
import { createSetAndWait, forceDelete, scaleAndWait, setPods, waitForSet } from "./cluster-pods.js";
import { expectConsistent as expectCluster } from "./cluster-test-kit.js";
import { snapshotHost } from "./host-state.js";
import { buildIpamkitImage, chartVersion } from "./image.js";
import { nodeCondition } from "./node-daemons.js";
import { until } from "./processes.js";
import { reconcileOnce, startReconcilerWatch } from "./reconciler-program.js";

// A real cluster: kube-apiserver, kube-controller-manager (node lifecycle, StatefulSet, DaemonSet,
// GC), kube-scheduler and two real nodes (kubelet + containerd each); Multus the primary CNI on
// both; two NADs written for Whereabouts (`"type": "whereabouts"`) served by ipamkit installed with
// helm. Everything asserted through the API: Multus' network-status, the IPPools, the ORIPs.
let cluster: Cluster;
const SET = "web";

beforeAll(async () => {
  cluster = await startCluster({ image: inject("ipamkitImage") });
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
}, 300_000);

const expectConsistent = () => expectCluster(cluster);

async function expectNothingLeft(): Promise<void> {
  await until("every reservation released", 60_000, async () => {
    const r = await checkCluster(cluster);
    return r.allocations.length === 0 && r.reservations.length === 0;
  });
}

const on = (pods: readonly V1Pod[], node: string) => pods.filter((p) => p.spec?.nodeName === node).map((p) => p.metadata?.name ?? "");
const addressesOf = async () => (await checkCluster(cluster)).podAddresses.map((a) => `${a.pod} ${a.interface} ${a.address}`).sort();
const entryIds = async () => new Set((await checkCluster(cluster)).allocations.map((a) => a.id));

/**
 * The seed report's move: `from` loses power (no DEL), the node lifecycle controller marks it
 * NotReady, its pods are force-deleted and the StatefulSet controller re-creates them on the other
 * node, where they get addresses. Returns the moved pods' names and the keys of the dead sandboxes.
 */
async function powerOffAndMove(from: string, replicas: number): Promise<{ moved: string[]; deadIds: Set<string> }> {
  const before = await setPods(cluster, SET);
  const moved = on(before, from);
  expect(moved.length).toBeGreaterThan(0);
  const deadIds = new Set(
    (await checkCluster(cluster)).allocations.filter((a) => moved.some((m) => a.podref.endsWith(`/${m}`))).map((a) => a.id),
  );
  await cluster.node(from).powerOff();
  await until(`${from} NotReady`, 90_000, async () => (await nodeCondition(cluster.core, from)) !== "True");
  await forceDelete(cluster, moved);
  const after = await waitForSet(cluster, SET, replicas);
  expect(on(after, from)).toEqual([]);
  return { moved, deadIds };
}

describe("a real cluster with Multus: NADs written for Whereabouts, served by ipamkit", () => {
  it("a StatefulSet of 4 with both NADs: network-status, the pods' netns and the IPPools agree; scaled to 0, all released", async () => {
    const pods = await createSetAndWait(cluster, SET, 4);
    expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(2);
    const report = await expectConsistent();
    expect(report.podAddresses).toHaveLength(8);
    expect(report.reservations).toHaveLength(8);
    for (const pod of pods) {
      const inside = netnsAddresses(cluster, pod);
      const reported = report.podAddresses.filter((a) => a.pod.endsWith(`/${pod.metadata?.name}`));
      expect(reported.map((a) => [a.interface, a.address]).sort()).toEqual(
        Object.entries(inside)
          .filter(([ifname]) => ifname !== "eth0")
          .sort(),
      );
      expect(Object.keys(inside)).toContain("eth0");
    }
    await scaleAndWait(cluster, SET, 0);
    await expectNothingLeft();
  }, 420_000);

  it("the seed report, reconciler once: node A dies, its pods are reborn on B and get addresses, then the reconciler frees the dead sandboxes' entries and no live one", async () => {
    await scaleAndWait(cluster, SET, 4);
    const { moved, deadIds } = await powerOffAndMove("node-a", 4);
    // the dangerous order: the reborn pods hold addresses under their own names while the dead
    // sandboxes' entries, under the same pod names, are still in the pools
    const stale = await checkCluster(cluster);
    expect(stale.allocations.filter((a) => deadIds.has(a.id))).toHaveLength(moved.length * 2);
    expect(stale.heldTwice).toEqual([]);
    expect(stale.statusWithoutEntry).toEqual([]);
    const live = await addressesOf();

    const pass = reconcileOnce(cluster.apiserver);
    expect(pass.status, pass.output).toBe(0);
    const ids = await entryIds();
    expect([...deadIds].filter((id) => ids.has(id))).toEqual([]);
    await expectConsistent();
    expect(await addressesOf()).toEqual(live);

    // node A comes back: its runtime's late DELs name the dead sandboxes' keys and free nothing live
    await cluster.node("node-a").powerOn();
    // the reboot found the dead sandboxes: the kubelet now tears them down (the late DELs)
    expect(cluster.node("node-a").deadSandboxes(cluster.namespace).length).toBeGreaterThan(0);
    await cluster.ready();
    await until("node A's dead sandboxes removed", 120_000, () => cluster.node("node-a").deadSandboxes(cluster.namespace).length === 0);
    await expectConsistent();
    expect(await addressesOf()).toEqual(live);
  }, 600_000);

  it("the seed report, reconciler watching: node B dies, its pods are reborn on A, the watching reconciler started after frees the dead entries and no live one", async () => {
    const { deadIds } = await powerOffAndMove("node-b", 4);
    const live = await addressesOf();
    const watching = startReconcilerWatch(cluster.apiserver, "5s");
    try {
      await until("the dead sandboxes' entries freed", 60_000, async () => {
        const ids = await entryIds();
        return [...deadIds].every((id) => !ids.has(id));
      });
      await expectConsistent();
      expect(await addressesOf()).toEqual(live);
      await cluster.node("node-b").powerOn();
      // the reboot found the dead sandboxes: the kubelet now tears them down (the late DELs)
      expect(cluster.node("node-b").deadSandboxes(cluster.namespace).length).toBeGreaterThan(0);
      await cluster.ready();
      await until("node B's dead sandboxes removed", 120_000, () => cluster.node("node-b").deadSandboxes(cluster.namespace).length === 0);
      // a full pass more while watching: still nothing live freed
      await new Promise((r) => setTimeout(r, 6_000));
      await expectConsistent();
      expect(await addressesOf()).toEqual(live);
    } finally {
      await watching.stop();
    }
    await scaleAndWait(cluster, SET, 0);
    await expectNothingLeft();
  }, 600_000);

  it("helm upgrade to a rebuilt image while a StatefulSet scales 0 → 8 → 0: every pod attached, every address released, none twice", async () => {
    const rebuilt = buildIpamkitImage(mkdtempSync(join(tmpdir(), "ipamkit-rebuilt-")), `localhost/ipamkit:${chartVersion()}-rebuilt`);
    for (const node of cluster.nodes) node.importImage(rebuilt.archive);
    const scaling = scaleAndWait(cluster, SET, 8, 300_000);
    await cluster.ipam.upgrade({}, rebuilt);
    await scaling;
    await expectConsistent();
    const agents = await cluster.ipam.pods();
    expect(agents.map((p) => p.spec?.containers.find((c) => c.name === "agent")?.image)).toEqual([rebuilt.ref, rebuilt.ref]);
    await scaleAndWait(cluster, SET, 0, 300_000);
    await expectNothingLeft();
    expect((await checkCluster(cluster)).heldTwice).toEqual([]);
  }, 600_000);

  it("with sticky on (helm upgrade), the pods reborn on the other node keep their addresses; a late DEL frees nothing live", async () => {
    await cluster.ipam.upgrade({ cni: { extraFlatFileKeys: { sticky: true, sticky_ttl: 30 } } });
    await cluster.ready();
    await scaleAndWait(cluster, SET, 4);
    const before = await addressesOf();
    const { moved } = await powerOffAndMove("node-a", 4);
    const after = await addressesOf();
    expect(after).toEqual(before);
    const pass = reconcileOnce(cluster.apiserver);
    expect(pass.status, pass.output).toBe(0);
    expect(await addressesOf()).toEqual(before);
    await cluster.node("node-a").powerOn();
    // the reboot found the dead sandboxes: the kubelet now tears them down (the late DELs)
    expect(cluster.node("node-a").deadSandboxes(cluster.namespace).length).toBeGreaterThan(0);
    await cluster.ready();
    await until("node A's dead sandboxes removed", 120_000, () => cluster.node("node-a").deadSandboxes(cluster.namespace).length === 0);
    await expectConsistent();
    expect(await addressesOf()).toEqual(before);
    expect(moved.length).toBeGreaterThan(0);
    await scaleAndWait(cluster, SET, 0);
    // kept for their pods for sticky_ttl, then the reconciler frees them
    await new Promise((r) => setTimeout(r, 31_000));
    expect(reconcileOnce(cluster.apiserver).status).toBe(0);
    await expectNothingLeft();
  }, 900_000);

  it("stop() restores the host", async () => {
    await cluster.stop();
    expect(snapshotHost({ links: cluster.links })).toEqual(cluster.before);
  }, 300_000);
});
