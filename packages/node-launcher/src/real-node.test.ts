import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { snapshotHost } from "./host-state.js";
import { readIpamState } from "./ipam-state.js";
import { type RealNode, startNode } from "./launcher.js";
import { deletePodsAndWait as deletePods, runningIp as podIp, podOnNode } from "./pods.js";
import { until } from "./processes.js";

// One real node (containerd 2.4 CRI + kubelet 1.37) against a real kube-apiserver. Every pod has two
// networks: eth0 on a bridge, eth1 a macvlan on a veth master; both IPAMs are ipamkit on the
// Kubernetes store, through the agent that runs as the chart's pod on the node (its installer put the
// static binary into the node's CNI bin dir; agent_required).
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
      range: "10.88.0.0/24",
      gateway: "10.88.0.1",
      macvlan: { range: "10.87.0.0/24" },
    });
  } catch (error) {
    await apiserver.stop();
    throw error;
  }
  core = apiserver.kubeConfig.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  // stop() is idempotent enough: the last test stops the node itself
  await node?.stop().catch(() => undefined);
  await apiserver?.stop();
});

const podSpec = (name: string) => podOnNode(node, name, NS);
const runningIp = (name: string) => podIp(core, node, name, NS);
const deletePodsAndWait = (names: readonly string[]) => deletePods(core, names, NS);

/** The interface's IPv4 address inside the pod sandbox's network namespace, read with nsenter. */
function netnsAddress(podName: string, ifname = "eth0"): string {
  const id = node.crictl(["pods", "--name", `^${podName}$`, "--namespace", NS, "--state", "ready", "-q"]).split("\n")[0] ?? "";
  const info = JSON.parse(node.crictl(["inspectp", id])) as {
    info?: { runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } } };
  };
  const netns = info.info?.runtimeSpec?.linux?.namespaces?.find((n) => n.type === "network")?.path ?? "";
  const out = spawnSync("nsenter", [`--net=${netns}`, "ip", "-4", "-o", "addr", "show", ifname], { encoding: "utf8" });
  return /inet (\d+\.\d+\.\d+\.\d+)\//.exec(out.stdout)?.[1] ?? `none (${out.stderr.trim()})`;
}

it("the agent runs from ipamkit's image as the chart's pod; its installer put only the static binary on the host", () => {
  const bin = readdirSync(node.layout.cniBinDir).sort();
  expect(bin).toContain("ipamkit");
  // no Node files on the host: direct mode (a Node start per call) is impossible here
  expect(bin.filter((f) => f.startsWith("ipamkit"))).toEqual(["ipamkit"]);
  const flat = JSON.parse(readFileSync(node.agent?.flatFile ?? "", "utf8")) as {
    agent_socket?: string;
    agent_required?: boolean;
    kubernetes?: { kubeconfig?: string };
  };
  expect(flat.agent_socket).toBe(node.layout.agentSocket);
  expect(flat.agent_required).toBe(true);
  // the plugin's kubeconfig carries the chart ServiceAccount's token, not the suite's admin token
  const kubeconfig = readFileSync(flat.kubernetes?.kubeconfig ?? "", "utf8");
  expect(kubeconfig).not.toContain(apiserver.token);
  expect(node.crictl(["pods", "--label", "app.kubernetes.io/name=ipamkit-node", "--state", "ready", "-q"])).not.toBe("");
});

it("pods created through the API get ipamkit addresses on both networks (status and netns); deleted, the addresses are released", async () => {
  const names = ["web-0", "web-1", "web-2"];
  for (const name of names) await core.createNamespacedPod({ namespace: NS, body: podSpec(name) });
  const ips = await Promise.all(names.map(runningIp));
  expect(new Set(ips).size).toBe(3);
  for (const ip of ips) expect(ip).toMatch(/^10\.88\.0\.\d+$/);
  expect(ips).not.toContain("10.88.0.1"); // the bridge's gateway
  for (const [i, name] of names.entries()) expect(netnsAddress(name)).toBe(ips[i]);
  const macvlan = names.map((name) => netnsAddress(name, "eth1"));
  for (const ip of macvlan) expect(ip).toMatch(/^10\.87\.0\.\d+$/);
  expect(new Set(macvlan).size).toBe(3);

  const held = await readIpamState(apiserver.kubeConfig);
  expect(held.heldTwice).toEqual([]);
  expect(held.keysWithTwo).toEqual([]);
  expect(held.allocations.map((a) => `${a.podref} ${a.ifname} ${a.address}`).sort()).toEqual(
    names.flatMap((n, i) => [`${NS}/${n} eth0 ${ips[i]}`, `${NS}/${n} eth1 ${macvlan[i]}`]).sort(),
  );

  // the node changed the host meanwhile (kubepods cgroups, the sandboxes' netns): restore has work to do
  const during = snapshotHost({ nodeDir: node.layout.dir, links: node.links });
  expect(during.cgroups.length).toBeGreaterThan(node.before.cgroups.length);
  expect(during.netns.length).toBeGreaterThanOrEqual(node.before.netns.length + 3);

  await deletePodsAndWait(names);
  await until("the pods' addresses released", 30_000, async () => (await readIpamState(apiserver.kubeConfig)).allocations.length === 0);
  const after = await readIpamState(apiserver.kubeConfig);
  expect(after.allocations).toEqual([]);
  expect(after.reservations).toEqual([]);
});

it("without sticky, a pod deleted and re-created under its name gets a fresh address; its old one was freed at DEL", async () => {
  await core.createNamespacedPod({ namespace: NS, body: podSpec("set-0") });
  const first = await runningIp("set-0");
  await deletePodsAndWait(["set-0"]);
  await until("set-0's addresses freed", 30_000, async () => (await readIpamState(apiserver.kubeConfig)).allocations.length === 0);
  // the freed address is the lowest free one again: the next pod takes it
  await core.createNamespacedPod({ namespace: NS, body: podSpec("other") });
  expect(await runningIp("other")).toBe(first);
  await core.createNamespacedPod({ namespace: NS, body: podSpec("set-0") });
  const reborn = await runningIp("set-0");
  expect(reborn).not.toBe(first);
  const held = await readIpamState(apiserver.kubeConfig);
  expect(held.heldTwice).toEqual([]);
  expect(held.keysWithTwo).toEqual([]);
  expect(
    held.allocations
      .filter((a) => a.ifname === "eth0")
      .map((a) => `${a.podref} ${a.address}`)
      .sort(),
  ).toEqual([`${NS}/other ${first}`, `${NS}/set-0 ${reborn}`].sort());
  await deletePodsAndWait(["set-0", "other"]);
  await until("the addresses released", 30_000, async () => (await readIpamState(apiserver.kubeConfig)).allocations.length === 0);
  expect((await readIpamState(apiserver.kubeConfig)).reservations).toEqual([]);
});

it("STATUS: Ready while the agent is up, NotReady naming agent_required when it stops, Ready again when it returns", async () => {
  const ready = async () => (await core.readNode({ name: node.name })).status?.conditions?.find((c) => c.type === "Ready");
  expect((await ready())?.status).toBe("True");
  await node.stopAgent();
  let message = "";
  await until("the Node NotReady", 45_000, async () => {
    const c = await ready();
    message = c?.message ?? "";
    return c?.status === "False";
  });
  // containerd passes the plugin's STATUS error on: "…the ipamkit agent (DaemonSet) is not running on this node (agent_required)"
  // (the kubelet still runs the agent's host-network pod while the node's network is not ready)
  expect(message).toMatch(/NetworkReady=false/);
  expect(message).toMatch(/ipamkit agent .* is not running on this node \(agent_required\)/);
  await node.startAgent();
  await until("the Node Ready again", 45_000, async () => (await ready())?.status === "True");
  // and pods start again once it is back
  await core.createNamespacedPod({ namespace: NS, body: podSpec("after-status") });
  expect(await runningIp("after-status")).toMatch(/^10\.88\.0\.\d+$/);
  await deletePodsAndWait(["after-status"]);
  await until("the address released", 30_000, async () => (await readIpamState(apiserver.kubeConfig)).allocations.length === 0);
  const after = await readIpamState(apiserver.kubeConfig);
  expect(after.heldTwice).toEqual([]);
  expect(after.reservations).toEqual([]);
});

it("stop() restores the host: state before the node == state after", async () => {
  await node.stop();
  const after = snapshotHost({ nodeDir: node.layout.dir, links: node.links });
  expect(after).toEqual(node.before);
});
