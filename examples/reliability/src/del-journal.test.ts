import { existsSync, mkdirSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { reconcileOnce } from "@ipamkit/reconciler";
import { createKubernetesPodSource, createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess } from "../../cni-plugin/test/agent-process.js";
import { onNode, useNode } from "../../cni-plugin/test/node-files.js";
import { cniEnv, runPlugin } from "../../cni-plugin/test/run-plugin.js";
import { scratchDir } from "../test/campaign.js";

// Issue 48, "DEL never strands a pod", on the Kubernetes store of a real kube-apiserver: pods are
// deleted while the node's agent is gone, so their DELs are journaled (exit 0); the agent, back,
// replays the journal by exact key; and what a node never replays (its journal lost) the
// reconciler frees as any orphan — by exact key and pod UID, never a live pod's reservation, and
// a pod recreated under the same name (a new UID) does not keep its predecessor's address. A
// replay after the reconciler released the same key releases nothing more.

const dir = scratchDir("journal");
useNode(dir);
const NS = "apps";
const RANGE = "10.69.0.0/24";
let server: KubeApiserver;
let agent: AgentProcess | undefined;
let core: CoreV1Api;
const uids = new Map<string, string>();

beforeAll(async () => {
  server = await startKubeApiserver({ namespaces: [NS] });
  core = server.kubeConfig.makeApiClient(CoreV1Api);
}, 180_000);
afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

const socketPath = join(dir, "run", "agent.sock");
const journal = join(dir, "journal");
const netconf = () => ({
  cniVersion: "1.1.0",
  name: "journal-kube",
  type: "macvlan",
  ipam: onNode({
    type: "ipamkit",
    range: RANGE,
    datastore: "kubernetes",
    kubernetes: { kubeconfig: server.kubeconfigPath },
    agent_socket: socketPath,
    agent_required: true,
    agent_journal_dir: journal,
  }),
});
const records = () => (existsSync(journal) ? readdirSync(journal).sort() : []);

async function createPod(name: string): Promise<void> {
  const pod = await core.createNamespacedPod({
    namespace: NS,
    body: { metadata: { name }, spec: { containers: [{ name: "app", image: "registry.example/app:1" }] } },
  });
  uids.set(name, pod.metadata?.uid ?? "");
}
async function deletePod(name: string): Promise<void> {
  await core.deleteNamespacedPod({ namespace: NS, name, gracePeriodSeconds: 0 });
  // a pod never scheduled goes at once
  for (let i = 0; i < 100; i++) {
    try {
      await core.readNamespacedPod({ namespace: NS, name });
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`pod ${name} still there`);
}

/** CNI call for container `id` of pod `name` through the binary. */
const call = (command: string, id: string, name: string) =>
  runPlugin(
    cniEnv(command, id, "net1", { CNI_ARGS: `K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${name};K8S_POD_UID=${uids.get(name)}` }),
    netconf(),
  );

/** Container ID → address, as the pool holds them. */
async function held(): Promise<Map<string, string>> {
  const store = createKubernetesStore({ kubeconfig: server.kubeConfig, namespace: "kube-system" });
  try {
    const pool = await store.readPool({ network: "", cidr: RANGE });
    return new Map((pool?.pool.reservations() ?? []).map((r) => [r.key.containerId, `10.69.0.${r.offset}`]));
  } finally {
    await store.close();
  }
}

async function until(what: string, test: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; agent log:\n${agent?.log() ?? ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopAgent(): Promise<void> {
  await agent?.stop();
  agent = undefined;
}

it("journaled while the agent is gone, replayed by exact key when it is back; the reconciler frees what is never replayed", {
  timeout: 300_000,
}, async () => {
  agent = await startAgentProcess(socketPath, { args: ["--warm", "kubernetes"] });
  for (let i = 0; i < 8; i++) {
    await createPod(`p${i}`);
    expect((await call("ADD", `c${i}`, `p${i}`)).code).toBe(0);
  }
  const before = await held();
  expect(before.size).toBe(8);
  await stopAgent();

  // the agent gone: six pods deleted, one of them recreated at once under the same name (a new UID);
  // each DEL is journaled and answered with success
  for (let i = 0; i < 6; i++) await deletePod(`p${i}`);
  await createPod("p5");
  for (let i = 0; i < 6; i++) {
    const del = await call("DEL", `c${i}`, `p${i}`);
    expect(del, del.stdout).toMatchObject({ code: 0, stdout: "" });
  }
  expect(records()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `del:journal-kube:c${i}:net1`));
  expect((await held()).size).toBe(8);

  // this node never replays c4 and c5 (its journal lost with the disk): the reconciler, run meanwhile,
  // frees every reservation whose pod (by UID) is gone — the journaled ones too — and nothing live
  const lost = join(dir, "lost");
  mkdirSync(lost);
  for (const id of ["c4", "c5"]) renameSync(join(journal, `del:journal-kube:${id}:net1`), join(lost, id));
  const pods = createKubernetesPodSource({ kubeConfig: server.kubeConfig });
  const store = createKubernetesStore({ kubeconfig: server.kubeConfig, namespace: "kube-system" });
  try {
    const report = await reconcileOnce({ store, pods, graceMs: 0 });
    const released = report.released.map((v) => `${v.observed.reservation.key.containerId} ${v.reason}`).sort();
    expect(released).toEqual([
      "c0 pod-missing",
      "c1 pod-missing",
      "c2 pod-missing",
      "c3 pod-missing",
      "c4 pod-missing",
      "c5 pod-uid-changed",
    ]);
  } finally {
    pods.close();
    await store.close();
  }
  const afterReconcile = await held();
  expect([...afterReconcile.keys()].sort()).toEqual(["c6", "c7"]);
  for (const [id, address] of afterReconcile) expect(address).toBe(before.get(id));

  // the agent back: the four records left are replayed (their keys are free already: nothing more released)
  agent = await startAgentProcess(socketPath, { args: ["--warm", "kubernetes"] });
  await until("the journal replayed", () => records().length === 0);
  expect(agent.log().match(/"msg":"DEL journal: replayed"/g)).toHaveLength(4);
  expect(await held()).toEqual(afterReconcile);

  // the recreated pod starts (a new sandbox); then the agent goes again and p6 is deleted
  expect((await call("ADD", "c5b", "p5")).code).toBe(0);
  await stopAgent();
  await deletePod("p6");
  expect((await call("DEL", "c6", "p6")).code).toBe(0);
  // an ADD meanwhile: refused, one line saying the agent is not installed on this node
  await createPod("p8");
  const add = await call("ADD", "c8", "p8");
  expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining("ipamkit's agent is not installed on this node") });
  agent = await startAgentProcess(socketPath, { args: ["--warm", "kubernetes"] });
  await until("c6 released", async () => !(await held()).has("c6"));
  await until("the journal empty", () => records().length === 0);
  const final = await held();
  expect([...final.keys()].sort()).toEqual(["c5b", "c7"]);
  expect(final.get("c7")).toBe(before.get("c7"));
  // and the ADD the runtime retries now succeeds
  expect((await call("ADD", "c8", "p8")).code).toBe(0);
});
