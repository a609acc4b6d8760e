import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { snapshotHost } from "./host-state.js";
import { readIpamState } from "./ipam-state.js";
import { type RealNode, startNode } from "./launcher.js";
import { deletePodsAndWait, podOnNode, runningIp } from "./pods.js";
import { until } from "./processes.js";

// The seed report's scenario on real components: the node dies (kubelet, containerd, shims and
// every pod process SIGKILLed: no CNI DEL), its pods are force-deleted and come back under the same
// names; the reconciler frees the dead sandboxes' addresses and never a live one.
const RECONCILER = fileURLToPath(new URL("../../../examples/cron-reconciler/dist/main.js", import.meta.url));
let apiserver: KubeApiserver;
let node: RealNode;
let core: CoreV1Api;
const NS = "default";
const NAMES = ["app-0", "app-1"];

beforeAll(async () => {
  apiserver = await startKubeApiserver();
  try {
    node = await startNode({
      apiserver,
      image: inject("ipamkitImage"),
      range: "10.90.0.0/24",
      gateway: "10.90.0.1",
      network: "ipamkit-poweroff",
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

function reconcileOnce(): string {
  if (!existsSync(RECONCILER))
    throw new Error(`${RECONCILER} is not built — run pnpm turbo run build --filter=@ipamkit/example-cron-reconciler`);
  const r = spawnSync(
    process.execPath,
    [RECONCILER, "--once", "--kubeconfig", apiserver.kubeconfigPath, "--grace", "0s", "--claim-settle", "0s"],
    {
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
  return `${r.stdout}${r.stderr}`;
}

const holdings = async () => (await readIpamState(apiserver.kubeConfig)).allocations.map((a) => `${a.podref} ${a.address} ${a.id}`).sort();

it("power-off: the reconciler frees the dead sandboxes' addresses, never a live one; the late DEL frees nothing live", async () => {
  for (const name of NAMES) await core.createNamespacedPod({ namespace: NS, body: podOnNode(node, name, NS) });
  const oldIps = await Promise.all(NAMES.map((name) => runningIp(core, node, name, NS)));
  const dead = await holdings();
  expect(dead.map((d) => d.split(" ")[1]).sort()).toEqual([...oldIps].sort());

  await node.powerOff();
  for (const name of NAMES) await core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 0 });
  await until("the pods gone", 30_000, async () => (await core.listNamespacedPod({ namespace: NS })).items.length === 0);
  // no DEL reached the plugin: the dead sandboxes still hold their addresses
  expect(await holdings()).toEqual(dead);
  // the same names come back (new UIDs), bound to the node that is still off
  for (const name of NAMES) await core.createNamespacedPod({ namespace: NS, body: podOnNode(node, name, NS) });
  const out = reconcileOnce();
  expect(await holdings(), out).toEqual([]);

  await node.powerOn();
  const newIps = await Promise.all(NAMES.map((name) => runningIp(core, node, name, NS)));
  expect(new Set(newIps).size).toBe(2);
  // the dead sandboxes' late DELs: containerd still knows them (NotReady); removing them through
  // CRI makes containerd call DEL with their own keys, which must free nothing of the new pods'
  const stale = node.crictl(["pods", "--state", "notready", "-q"]).split("\n").filter(Boolean);
  for (const id of stale) {
    try {
      node.crictl(["rmp", "--force", id]);
    } catch {
      // kubelet removed it first: it got its DEL that way
    }
  }
  await until("the dead sandboxes removed", 30_000, () => node.crictl(["pods", "--state", "notready", "-q"]) === "");
  const live = await readIpamState(apiserver.kubeConfig);
  expect(live.heldTwice).toEqual([]);
  expect(live.keysWithTwo).toEqual([]);
  expect(live.allocations.map((a) => `${a.podref} ${a.address}`).sort()).toEqual(NAMES.map((n, i) => `${NS}/${n} ${newIps[i]}`).sort());
  expect(live.allocations.some((a) => dead.some((d) => d.endsWith(` ${a.id}`)))).toBe(false);

  // a pass over live pods releases nothing
  const before = await holdings();
  reconcileOnce();
  expect(await holdings()).toEqual(before);

  await deletePodsAndWait(core, NAMES, NS);
  await until("the addresses released", 30_000, async () => (await holdings()).length === 0);
  const after = await readIpamState(apiserver.kubeConfig);
  expect(after.reservations).toEqual([]);
  expect(after.heldTwice).toEqual([]);
});

it("stop() restores the host", async () => {
  await node.stop();
  expect(snapshotHost({ nodeDir: node.layout.dir, links: node.links })).toEqual(node.before);
});
