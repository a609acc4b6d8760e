import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { snapshotHost } from "./host-state.js";
import { readIpamState } from "./ipam-state.js";
import { type RealNode, startNode } from "./launcher.js";
import { deletePodsAndWait, podOnNode, runningIp } from "./pods.js";

// StatefulSet-style re-creation on a real node: a pod deleted and created again under the same
// name (a new UID, a new sandbox) keeps its address on a network with `sticky: true`.
let apiserver: KubeApiserver;
let node: RealNode;
let core: CoreV1Api;
const NS = "default";

beforeAll(async () => {
  apiserver = await startKubeApiserver();
  try {
    node = await startNode({
      apiserver,
      image: inject("ipamkitImage"),
      range: "10.89.0.0/24",
      gateway: "10.89.0.1",
      network: "ipamkit-sticky",
      sticky: true,
    });
  } catch (error) {
    await apiserver.stop();
    throw error;
  }
  core = apiserver.kubeConfig.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  await node?.stop().catch(() => undefined);
  await apiserver?.stop();
});

const create = async (name: string) => {
  await core.createNamespacedPod({ namespace: NS, body: podOnNode(node, name, NS) });
  return runningIp(core, node, name, NS);
};

it("a pod re-created under its name keeps its address; the kept address goes to no other pod", async () => {
  const db0 = await create("db-0");
  const db1 = await create("db-1");
  expect(db0).not.toBe(db1);
  const uid0 = (await core.readNamespacedPod({ name: "db-0", namespace: NS })).metadata?.uid;

  await deletePodsAndWait(core, ["db-0"], NS);
  const kept = await readIpamState(apiserver.kubeConfig);
  // DEL kept db-0's address for it instead of freeing it
  expect(kept.allocations.find((a) => a.address === db0)).toMatchObject({ podref: `${NS}/db-0`, released: expect.any(String) });
  // a new pod meanwhile gets a third address, never the kept one
  const other = await create("other-0");
  expect([db0, db1]).not.toContain(other);

  const reborn = await create("db-0");
  expect((await core.readNamespacedPod({ name: "db-0", namespace: NS })).metadata?.uid).not.toBe(uid0);
  expect(reborn).toBe(db0);
  const held = await readIpamState(apiserver.kubeConfig);
  expect(held.heldTwice).toEqual([]);
  expect(held.keysWithTwo).toEqual([]);
  expect(
    held.allocations
      .filter((a) => a.released === undefined)
      .map((a) => `${a.podref} ${a.address}`)
      .sort(),
  ).toEqual([`${NS}/db-0 ${db0}`, `${NS}/db-1 ${db1}`, `${NS}/other-0 ${other}`].sort());

  await deletePodsAndWait(core, ["db-0", "db-1", "other-0"], NS);
  const after = await readIpamState(apiserver.kubeConfig);
  // sticky: every address left is kept (released) for a deleted pod until its keep time; none is live
  expect(after.allocations.map((a) => `${a.podref} ${a.address}`).sort()).toEqual(
    [`${NS}/db-0 ${db0}`, `${NS}/db-1 ${db1}`, `${NS}/other-0 ${other}`].sort(),
  );
  expect(after.allocations.every((a) => a.released !== undefined)).toBe(true);
  expect(after.heldTwice).toEqual([]);
});

it("stop() restores the host", async () => {
  await node.stop();
  expect(snapshotHost({ nodeDir: node.layout.dir, links: node.links })).toEqual(node.before);
});
