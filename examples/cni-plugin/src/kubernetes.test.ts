import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { afterAll, expect, it } from "vitest";
import { nodeFlatFile, onNode, useNode } from "../test/node-files.js";
import { cniEnv, runPlugin } from "../test/run-plugin.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
/** A path for a kubeconfig file named `name` in a fresh temporary dir (the test's node: its flat file goes there too), removed after the file's tests. */
function kubeconfigPath(name = "kubeconfig"): string {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-cni-kube-"));
  dirs.push(dir);
  useNode(dir);
  return join(dir, name);
}

it("the binary on the Kubernetes store: ADD, repeated ADD, DEL, re-ADD through a kubeconfig to the test API server", async () => {
  const server = await startKubeTestServer({ port: 0, token: "t0ken" });
  try {
    const kubeconfig = kubeconfigPath("whereabouts.kubeconfig");
    await server.writeKubeconfig(kubeconfig, { namespace: "whereabouts" });
    // a Whereabouts NAD names the kubeconfig the installer wrote, which the node's flat file names too:
    // it keeps working, without a warning (the kubeconfig is a node-level setting: issue 47)
    nodeFlatFile(join(kubeconfig, ".."), { datastore: "kubernetes", kubernetes: { kubeconfig } });
    const conf = {
      cniVersion: "1.0.0",
      name: "kube-net",
      type: "macvlan",
      ipam: { type: "whereabouts", range: "10.72.0.0/24", kubernetes: { kubeconfig } },
    };
    const args = { CNI_ARGS: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=uid-1" };
    const add = await runPlugin(cniEnv("ADD", "k1", "net1", args), conf);
    expect(add.json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.72.0.1/24" }] });
    expect(add.stderr).toBe("");
    expect((await runPlugin(cniEnv("ADD", "k1", "net1", args), conf)).json).toEqual(add.json);
    expect((await runPlugin(cniEnv("ADD", "k2"), conf)).json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.72.0.2/24" }] });
    const pool = (await (
      await fetch(`${server.url}/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/whereabouts/ippools/kube-net-10.72.0.0-24`, {
        headers: { authorization: "Bearer t0ken" },
      })
    ).json()) as { spec?: { allocations?: Record<string, Record<string, unknown>> } };
    // no network_name: the pool is the unnamed network's, named as Whereabouts names it
    expect(pool.spec).toBeUndefined();
    const unnamed = (await (
      await fetch(`${server.url}/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/whereabouts/ippools/10.72.0.0-24`, {
        headers: { authorization: "Bearer t0ken" },
      })
    ).json()) as { spec: { allocations: Record<string, Record<string, unknown>> } };
    expect(unnamed.spec.allocations["1"]).toMatchObject({ id: "k1", ifname: "net1", podref: "default/web-0", poduid: "uid-1" });
    expect((await runPlugin(cniEnv("DEL", "k1"), conf)).code).toBe(0);
    expect((await runPlugin(cniEnv("ADD", "k3"), conf)).json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.72.0.1/24" }] });
  } finally {
    await server.close();
  }
});

it("an unreachable API server is reported with code 11, never swallowed on DEL", async () => {
  const server = await startKubeTestServer({ port: 0 });
  const kubeconfig = kubeconfigPath();
  await server.writeKubeconfig(kubeconfig);
  await server.close();
  const conf = {
    cniVersion: "1.0.0",
    name: "kube-down",
    type: "macvlan",
    ipam: onNode({ type: "ipamkit", range: "10.73.0.0/24", kubernetes: { kubeconfig } }),
  };
  const del = await runPlugin(cniEnv("DEL", "d1"), conf);
  expect(del.code).toBe(1);
  expect(del.json?.code).toBe(11);
});

it("20 ADD processes at once on one Kubernetes pool all succeed: conflicts from the separately bundled store are retried", async () => {
  const server = await startKubeTestServer({ port: 0 });
  try {
    const kubeconfig = kubeconfigPath();
    await server.writeKubeconfig(kubeconfig, { namespace: "burst" });
    const conf = {
      cniVersion: "1.1.0",
      name: "kube-burst",
      ipam: onNode({ type: "ipamkit", range: "10.74.0.0/24", kubernetes: { kubeconfig } }),
    };
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => runPlugin(cniEnv("ADD", `b${i}`), conf)));
    expect(runs.filter((r) => r.code !== 0).map((r) => r.stdout)).toEqual([]);
    expect(new Set(runs.map((r) => JSON.stringify(r.json?.ips))).size).toBe(20);
    // the processes did meet each other: without retries some would have answered 11
    expect(server.stats().byStatus[409] ?? 0).toBeGreaterThan(0);
  } finally {
    await server.close();
  }
}, 120_000);
