import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_ON, ETCD_VALUES, helmRun, NAMESPACE, template } from "../test/chart.js";
import { CHART, type Rendered } from "../test/helm.js";
import { openapiValidator } from "../test/openapi.js";
import { removeTempDirs } from "../test/run.js";

// The rendered chart on a real kube-apiserver (packages/kube-apiserver-launcher; no kubelet: objects
// are created, no pod runs): helm install and uninstall; every object through a server-side
// dry-run apply; every object checked against the server's own OpenAPI v3 schemas, strictly.

const VALUE_SETS: Record<string, string[]> = {
  default: [],
  etcd: ETCD_VALUES,
  "kube-system, watch mode, everything on": ["--set", "poolNamespace=kube-system", "--set", "reconciler.mode=watch", ...ALL_ON],
  "etcd, everything on, metrics off": [...ETCD_VALUES, ...ALL_ON, "--set", "agent.metrics.enabled=false"],
};
/** The Prometheus Operator's kinds: no CRD for them on this server (checked in chart-metrics.test.ts). */
const isMonitoring = (o: Rendered) => o.apiVersion.startsWith("monitoring.coreos.com/");

let api: KubeApiserver;
beforeAll(async () => {
  api = await startKubeApiserver({ crds: [], namespaces: [NAMESPACE] });
});
afterAll(async () => {
  await api?.stop();
  removeTempDirs();
});

async function established(name: string): Promise<void> {
  const crds = api.kubeConfig.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const crd = await crds.readCustomResourceDefinition({ name });
    if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) return;
    if (Date.now() > deadline) throw new Error(`CRD ${name} not Established`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("the chart on a real kube-apiserver", () => {
  it("helm install creates it all (the CRDs from crds/ first), helm uninstall removes all but the CRDs", async () => {
    const kube = ["--namespace", NAMESPACE, "--kubeconfig", api.kubeconfigPath];
    const installed = helmRun(["install", "ipamkit", CHART, ...kube]);
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    await established("ippools.whereabouts.cni.cncf.io");
    const apps = api.kubeConfig.makeApiClient(AppsV1Api);
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const names = async () => [
      ...(await apps.listNamespacedDaemonSet({ namespace: NAMESPACE })).items.map((o) => `DaemonSet/${o.metadata?.name}`),
      ...(await apps.listNamespacedDeployment({ namespace: NAMESPACE })).items.map((o) => `Deployment/${o.metadata?.name}`),
      ...(await core.listNamespacedService({ namespace: NAMESPACE })).items.map((o) => `Service/${o.metadata?.name}`),
      ...(await core.listNamespacedConfigMap({ namespace: NAMESPACE })).items
        .map((o) => `ConfigMap/${o.metadata?.name}`)
        .filter((n) => n !== "ConfigMap/kube-root-ca.crt"),
    ];
    expect((await names()).sort()).toEqual([
      "ConfigMap/ipamkit-reconciler-config",
      "DaemonSet/ipamkit-node",
      "Deployment/ipamkit-reconciler",
      "Service/ipamkit-node-metrics",
      "Service/ipamkit-reconciler-metrics",
    ]);
    expect(helmRun(["uninstall", "ipamkit", ...kube]).code).toBe(0);
    expect(await names()).toEqual([]);
    // helm never deletes CRDs
    await established("ippools.whereabouts.cni.cncf.io");
  });

  it("every rendered object passes a server-side dry-run apply (the CRDs applied for real first)", async () => {
    const client = KubernetesObjectApi.makeApiClient(api.kubeConfig);
    const apply = (o: Rendered, dryRun: string | undefined) =>
      client.patch(o, undefined, dryRun, "ipamkit-chart-test", true, PatchStrategy.ServerSideApply);
    for (const crd of template([], true).filter((o) => o.kind === "CustomResourceDefinition")) {
      await apply(crd, undefined);
      await established(crd.metadata.name);
    }
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      const objects = template(values).filter((o) => !isMonitoring(o));
      expect(objects.length, name).toBeGreaterThan(10);
      for (const object of objects) {
        const applied = await apply(object, "All").catch((error: Error & { body?: string }) => {
          throw new Error(`${name}: ${object.kind}/${object.metadata.name}: ${error.body ?? error.message}`);
        });
        expect(applied.metadata?.name).toBe(object.metadata.name);
      }
    }
  });

  it("every rendered object validates against the server's OpenAPI v3 schemas, unknown fields refused", async () => {
    const { validate } = await openapiValidator(api);
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      for (const object of template(values).filter((o) => !isMonitoring(o))) expect(await validate(object), name).toEqual([]);
    }
    // the check can fail: a misspelt field, a wrong type
    const objects = template();
    const ds = structuredClone(objects.find((o) => o.kind === "DaemonSet") as Rendered);
    ds.spec.template.spec.containers[0].livenessProbe.httpGet.paht = "/healthz";
    expect((await validate(ds)).join("\n")).toMatch(
      /DaemonSet\/ipamkit-node\/spec\/template\/spec\/containers\/0\/livenessProbe\/httpGet: must NOT have additional properties \{"additionalProperty":"paht"\}/,
    );
    const deployment = structuredClone(objects.find((o) => o.kind === "Deployment") as Rendered);
    deployment.spec.replicas = "two";
    expect((await validate(deployment)).join("\n")).toContain("Deployment/ipamkit-reconciler/spec/replicas: must be integer");
  });
});
