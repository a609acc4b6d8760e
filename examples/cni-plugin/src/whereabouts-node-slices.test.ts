import { reconcileNodeSlices } from "@ipamkit/storage-kubernetes";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cniEnv, runPlugin } from "../test/run-plugin.js";
import { GROUP, type Interop, interopConf, POOL_NAMESPACE, startInterop, VERSION } from "../test/whereabouts.js";
import { runReconciler } from "../test/whereabouts-legacy.js";

// ipamkit keeping Whereabouts' node slices (NodeSlicePool status) with Whereabouts' node-slice
// controller gone, on a real kube-apiserver with Whereabouts' CRDs; Whereabouts' own CNI binary
// (v0.9.2) then allocates on the node from the slice ipamkit assigned.

let interop: Interop;
let notReady: unknown;
beforeAll(async () => {
  interop = await startInterop().catch((error: unknown) => {
    notReady = error;
    return undefined as unknown as Interop;
  });
});
beforeEach(() => {
  if (notReady !== undefined) throw notReady;
});
afterAll(async () => {
  await interop?.stop();
});

const POOL = "slicenet";
const nodes = () => interop.api.kubeConfig.makeApiClient(CoreV1Api);
const slicePool = async () =>
  (await interop.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: POOL_NAMESPACE,
    plural: "nodeslicepools",
    name: POOL,
  })) as {
    status: { allocations: { nodeName: string; sliceRange: string }[] };
  };
const pass = () => reconcileNodeSlices({ kubeConfig: interop.api.kubeConfig, namespace: POOL_NAMESPACE });

async function whereaboutsOn(node: string, command: "ADD" | "DEL", id: string) {
  const conf = interopConf(interop, "10.90.0.0/22", { node_slice_size: "/24", network_name: POOL });
  const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-${id};K8S_POD_INFRA_CONTAINER_ID=${id}`;
  return runPlugin(cniEnv(command, id, "net1", { CNI_ARGS: args, NODENAME: node }), conf, interop.binary("whereabouts"));
}

describe("node slices kept by ipamkit, served by Whereabouts' binary", () => {
  it("assigns a slice to a new node, frees a deleted node's idle slice, keeps a busy one, and writes nothing when nothing changes", async () => {
    for (const name of ["node-a", "node-b"]) await nodes().createNode({ body: { metadata: { name } } });
    await interop.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: POOL_NAMESPACE,
      plural: "nodeslicepools",
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "NodeSlicePool",
        metadata: { name: POOL },
        spec: { range: "10.90.0.0/22", sliceSize: "/24" },
        // as Whereabouts' controller left it: node-a's slice, a deleted node's, two free
        status: {
          allocations: [
            { nodeName: "node-a", sliceRange: "10.90.0.0/24" },
            { nodeName: "gone", sliceRange: "10.90.1.0/24" },
            { nodeName: "", sliceRange: "10.90.2.0/24" },
            { nodeName: "", sliceRange: "10.90.3.0/24" },
          ],
        },
      },
    });
    // without a slice, Whereabouts' binary cannot serve node-b
    expect((await whereaboutsOn("node-b", "ADD", "early")).code).not.toBe(0);
    const first = await pass();
    expect(first.freed).toEqual([{ pool: POOL, node: "gone", slice: "10.90.1.0/24" }]);
    expect(first.assigned).toEqual([{ pool: POOL, node: "node-b", slice: "10.90.1.0/24" }]);
    expect((await slicePool()).status.allocations.map((a) => a.nodeName)).toEqual(["node-a", "node-b", "", ""]);

    const added = await whereaboutsOn("node-b", "ADD", "b1");
    expect(added.code, added.stdout).toBe(0);
    expect((added.json?.ips as { address: string }[] | undefined)?.[0]?.address).toBe("10.90.1.1/22");

    const version = (await slicePool()) as unknown as { metadata: { resourceVersion: string } };
    const idle = await pass();
    expect([idle.assigned, idle.freed]).toEqual([[], []]);
    expect(((await slicePool()) as unknown as { metadata: { resourceVersion: string } }).metadata.resourceVersion).toBe(
      version.metadata.resourceVersion,
    );

    // node-b deleted while its slice still holds an address: kept until the address is released
    await nodes().deleteNode({ name: "node-b" });
    expect((await pass()).freed).toEqual([]);
    expect((await whereaboutsOn("node-b", "DEL", "b1")).code).toBe(0);
    expect((await pass()).freed).toEqual([{ pool: POOL, node: "node-b", slice: "10.90.1.0/24" }]);
  }, 120_000);

  it("the reconciler does the same on its passes with --node-slices true (examples/cron-reconciler, --once)", async () => {
    await nodes().createNode({ body: { metadata: { name: "node-c" } } });
    const run = await runReconciler(interop, ["--namespace", POOL_NAMESPACE, "--node-slices", "true"]);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain("node slice assigned");
    const assigned = (await slicePool()).status.allocations.find((a) => a.nodeName === "node-c");
    expect(assigned?.sliceRange).toBe("10.90.1.0/24");
    const added = await whereaboutsOn("node-c", "ADD", "c1");
    expect(added.code, added.stdout).toBe(0);
    expect((added.json?.ips as { address: string }[] | undefined)?.[0]?.address).toBe("10.90.1.1/22");
  }, 120_000);
});
