import { attachmentKey } from "@ipamkit/core";
import { createKubernetesPodWatch } from "@ipamkit/storage-kubernetes";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type PodControllerOptions, runPodController } from "../src/controller.js";
import type { ReconcileReport } from "../src/reconcile.js";
import { type Cluster, range, standIn, startCluster } from "./cluster.js";

const key = (containerId: string) => attachmentKey({ containerId, ifName: "net1" });
const pool = { network: "", cidr: range.cidr.text };

let cluster: Cluster;
let stop: AbortController;
let running: Promise<void> | undefined;
const passes: { kind: string; report?: ReconcileReport; error?: Error }[] = [];

beforeEach(async () => {
  cluster = await startCluster();
  stop = new AbortController();
  passes.length = 0;
});
afterEach(async () => {
  stop.abort();
  await running;
  await cluster.close();
});

function start(extra: Partial<PodControllerOptions> = {}): void {
  running = runPodController(
    {
      store: cluster.store,
      pods: cluster.pods,
      podWatch: createKubernetesPodWatch({ kubeConfig: cluster.kubeConfig }),
      resyncMs: 3_600_000,
      debounceMs: 50,
      onPass: (p) => passes.push(p),
      ...extra,
    },
    stop.signal,
  );
}

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const held = async () => ((await cluster.store.readPool(pool))?.pool.reservations() ?? []).map((r) => r.key.containerId);
/** The passes of this kind that released `containerId` (a pass is reported after its writes, so wait for the report, not the store). */
const releasing = (kind: string, containerId: string) =>
  passes.filter((p) => p.kind === kind && p.report?.released.some((v) => v.observed.reservation.key.containerId === containerId));

it("the start-up pass releases what was orphaned while no controller ran", async () => {
  await cluster.oldIpam.allocate({ ranges: [range], key: key("missed"), podRef: "ns/deleted-while-down" });
  start();
  await until(() => passes.length > 0, "the first pass");
  expect(passes[0]).toMatchObject({ kind: "full" });
  expect(passes[0]?.report?.released.map((v) => v.reason)).toEqual(["pod-missing"]);
  expect(await held()).toEqual([]);
});

it("a pod deleted or finished while running loses its IP in a targeted pass; the others keep theirs", async () => {
  for (const name of ["doomed", "finisher", "keeper"]) {
    const uid = await cluster.createPod({ name, net1: [] });
    await cluster.oldIpam.allocate({ ranges: [range], key: key(name), podRef: `ns/${name}`, podUid: uid });
  }
  start();
  await until(() => passes.length > 0, "the first pass");
  expect(passes[0]?.report?.released).toEqual([]);

  await cluster.deletePod("ns", "doomed");
  await until(() => releasing("targeted", "doomed").length > 0, "doomed's release in a targeted pass");
  const finisher = await cluster.core.readNamespacedPod({ namespace: "ns", name: "finisher" });
  await cluster.core.replaceNamespacedPodStatus({
    namespace: "ns",
    name: "finisher",
    body: { ...finisher, status: { phase: "Succeeded" } },
  });
  await until(() => releasing("targeted", "finisher").length > 0, "finisher's release in a targeted pass");

  expect(await held()).toEqual(["keeper"]);
  const targeted = passes.filter((p) => p.kind === "targeted");
  expect(targeted.length).toBeGreaterThanOrEqual(2);
  for (const p of targeted) expect(p.report?.reservations).toBeLessThanOrEqual(1);
});

it("keeps watching across server-side watch timeouts", async () => {
  start({ podWatch: createKubernetesPodWatch({ kubeConfig: cluster.kubeConfig, timeoutSeconds: 1, retryMs: 50 }) });
  await until(() => passes.length > 0, "the first pass");
  await new Promise((r) => setTimeout(r, 2_500));
  await cluster.createPod({ name: "late" });
  await cluster.oldIpam.allocate({ ranges: [range], key: key("late"), podRef: "ns/late" });
  await cluster.deletePod("ns", "late");
  await until(() => releasing("targeted", "late").length > 0, "late's release in a targeted pass");
  expect(releasing("full", "late")).toEqual([]);
  expect(await held()).toEqual([]);
});

it("a failing pass is reported and the controller goes on", async () => {
  await cluster.oldIpam.allocate({ ranges: [range], key: key("x"), podRef: "ns/x" });
  standIn(cluster).failNext({
    method: "GET",
    pathPrefix: "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools",
    status: 503,
    times: 1,
  });
  start();
  await until(() => passes.length > 0, "the first pass");
  expect(passes[0]?.error?.name).toBe("StoreUnavailableError");
  await cluster.createPod({ name: "x" });
  await cluster.deletePod("ns", "x");
  await until(async () => (await held()).length === 0, "x's release after the pod event");
});

it("stops promptly when aborted", async () => {
  start();
  await until(() => passes.length > 0, "the first pass");
  const t0 = Date.now();
  stop.abort();
  await running;
  expect(Date.now() - t0).toBeLessThan(5_000);
});
