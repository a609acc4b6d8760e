import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_CRDS } from "@ipamkit/kube-apiserver-launcher";
import { loadAllYaml } from "@kubernetes/client-node";
import { afterAll, describe, expect, inject, it } from "vitest";
import { ALL_ON, ETCD_VALUES, find, helmRun, NAMESPACE, template } from "../test/chart.js";
import { CHART, type Rendered } from "../test/helm.js";
import { removeTempDirs, run, serviceAccountVolume, tempDir } from "../test/run.js";

// charts/ipamkit with a real helm (test-infra/helm): lint, template with the default and the etcd
// values, the rendered installer arguments run by the real installer, least-privilege RBAC
// identical to the audited manifests. chart-values.test.ts: the operator's values;
// chart-apiserver.test.ts: the rendered objects on a real kube-apiserver.

const RBAC = join(CHART, "..", "..", "packages", "storage-kubernetes", "manifests");
afterAll(removeTempDirs);

const rulesOf = (file: string, kind: string, name: string) =>
  ((loadAllYaml(readFileSync(join(RBAC, file), "utf8")) as Rendered[]).find((o) => o.kind === kind && o.metadata.name === name) as Rendered)
    .rules;

describe("helm lint and template", () => {
  it("lints clean with the default and the etcd values; bad values fail with the chart's message", () => {
    for (const values of [[], ETCD_VALUES, [...ETCD_VALUES, ...ALL_ON], ALL_ON]) {
      const r = helmRun(["lint", "--strict", CHART, ...values]);
      expect(r.stdout + r.stderr).not.toMatch(/\[ERROR\]|\[WARNING\]/);
      expect(r.code).toBe(0);
    }
    expect(helmRun(["template", "x", CHART, "--set", "store.type=consul"]).stderr).toMatch(
      /values don't meet the specifications of the schema[\s\S]*at '\/store\/type': value must be one of 'kubernetes', 'etcd'/,
    );
    expect(helmRun(["template", "x", CHART, "--set", "store.type=etcd"]).stderr).toContain("store.type etcd needs store.etcd.endpoints");
  });

  it("renders the project's CRDs unchanged and RBAC identical to the audited least-privilege manifests", () => {
    const objects = template([], true);
    const crds = objects.filter((o) => o.kind === "CustomResourceDefinition");
    expect(crds).toEqual((loadAllYaml(readFileSync(PROJECT_CRDS, "utf8")) as Rendered[]).filter((o) => o !== null));
    expect(find(objects, "Role", "ipamkit-cni").rules).toEqual(rulesOf("rbac-cni.yaml", "Role", "ipamkit-cni"));
    expect(find(objects, "Role", "ipamkit-reconciler").rules).toEqual(rulesOf("rbac-reconciler.yaml", "Role", "ipamkit-reconciler"));
    expect(find(objects, "ClusterRole", "ipamkit-reconciler-pods").rules).toEqual(
      rulesOf("rbac-reconciler.yaml", "ClusterRole", "ipamkit-reconciler-pods"),
    );
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      "ClusterRole/ipamkit-reconciler-pods",
      "ClusterRoleBinding/ipamkit-reconciler-pods",
      "ConfigMap/ipamkit-reconciler-config",
      "CustomResourceDefinition/ippools.whereabouts.cni.cncf.io",
      "CustomResourceDefinition/nodeslicepools.whereabouts.cni.cncf.io",
      "CustomResourceDefinition/overlappingrangeipreservations.whereabouts.cni.cncf.io",
      "DaemonSet/ipamkit-node",
      "Deployment/ipamkit-reconciler",
      "PodDisruptionBudget/ipamkit-reconciler",
      "Role/ipamkit-cni",
      "Role/ipamkit-reconciler",
      "RoleBinding/ipamkit-cni",
      "RoleBinding/ipamkit-reconciler",
      "Service/ipamkit-node-metrics",
      "Service/ipamkit-reconciler-metrics",
      "ServiceAccount/ipamkit-cni",
      "ServiceAccount/ipamkit-reconciler",
    ]);
  });

  it("whereaboutsLease: the Lease grants of rbac-cni-whereabouts-lease.yaml and the flat-file key; refused with etcd", () => {
    const objects = template(["--set", "whereaboutsLease=true"]);
    const lease = rulesOf("rbac-cni-whereabouts-lease.yaml", "Role", "ipamkit-cni-whereabouts-lease");
    expect(find(objects, "Role", "ipamkit-cni").rules).toEqual([...rulesOf("rbac-cni.yaml", "Role", "ipamkit-cni"), ...lease]);
    const install = find(objects, "DaemonSet", "ipamkit-node").spec.template.spec.initContainers[0];
    const flat = JSON.parse(install.args[install.args.indexOf("--flat-file-json") + 1]);
    expect(flat.whereabouts_lease).toBe(true);
    const off = find(template(), "DaemonSet", "ipamkit-node").spec.template.spec.initContainers[0];
    expect(JSON.parse(off.args[off.args.indexOf("--flat-file-json") + 1])).not.toHaveProperty("whereabouts_lease");
    expect(helmRun(["template", "x", CHART, ...ETCD_VALUES, "--set", "whereaboutsLease=true"]).stderr).toContain(
      "whereaboutsLease needs store.type kubernetes",
    );
  });

  it("reconciler.nodeSlices: --node-slices and the grants of rbac-reconciler-node-slices.yaml; refused with etcd or watch mode", () => {
    const objects = template(["--set", "reconciler.nodeSlices=true"]);
    expect(find(objects, "Role", "ipamkit-reconciler-node-slices").rules).toEqual(
      rulesOf("rbac-reconciler-node-slices.yaml", "Role", "ipamkit-reconciler-node-slices"),
    );
    expect(find(objects, "ClusterRole", "ipamkit-reconciler-nodes").rules).toEqual(
      rulesOf("rbac-reconciler-node-slices.yaml", "ClusterRole", "ipamkit-reconciler-nodes"),
    );
    expect(find(objects, "RoleBinding", "ipamkit-reconciler-node-slices").subjects).toEqual([
      { kind: "ServiceAccount", name: "ipamkit-reconciler", namespace: NAMESPACE },
    ]);
    const args = (o: Rendered[]) => find(o, "Deployment", "ipamkit-reconciler").spec.template.spec.containers[0].args as string[];
    expect(args(objects)).toContain("--node-slices=true");
    // off by default: no flag, no grant
    const off = template();
    expect(args(off)).not.toContain("--node-slices=true");
    expect(off.filter((o) => o.metadata.name.includes("node-slices") || o.metadata.name.endsWith("-nodes"))).toEqual([]);
    expect(helmRun(["template", "x", CHART, ...ETCD_VALUES, "--set", "reconciler.nodeSlices=true"]).stderr).toContain(
      "reconciler.nodeSlices needs store.type kubernetes",
    );
    expect(helmRun(["template", "x", CHART, "--set", "reconciler.nodeSlices=true", "--set", "reconciler.mode=watch"]).stderr).toContain(
      "reconciler.nodeSlices needs reconciler.mode cron",
    );
  });

  it("the DaemonSet's installer arguments, run by the real installer, write the flat file the agent's socket and probes match", async () => {
    for (const values of [[], ETCD_VALUES]) {
      const ds = find(template(values), "DaemonSet", "ipamkit-node");
      const spec = ds.spec.template.spec;
      const install = spec.initContainers[0];
      const agent = spec.containers.find((c: Rendered) => c.name === "agent");
      const socket = agent.args[agent.args.indexOf("--socket") + 1];
      expect(agent.readinessProbe.exec.command).toEqual(["/usr/bin/node", "/app/dist/ipamkit-probe", "--socket", socket]);
      expect(agent.startupProbe.exec.command).toEqual(agent.readinessProbe.exec.command);
      expect(agent.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
      const host = tempDir("ipamkit-charthost-");
      const sa = join(tempDir("ipamkit-chartsa-"), "sa");
      serviceAccountVolume(sa, { token: "t", ca: "CA\n", namespace: NAMESPACE });
      // the rendered arguments, with the test's host root, ServiceAccount and plugin (a later value wins)
      const args = [...install.args, "--host-root", host, "--service-account-dir", sa, "--source", inject("pluginDist")];
      const r = await run(join(inject("installDist"), "ipamkit-install"), args, {
        KUBERNETES_SERVICE_HOST: "10.96.0.1",
        KUBERNETES_SERVICE_PORT: "443",
      });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const flat = JSON.parse(readFileSync(join(host, "etc/cni/net.d/whereabouts.d/whereabouts.conf"), "utf8"));
      expect(flat).toMatchObject({ agent_socket: socket, agent_required: true });
      const watcher = spec.containers.find((c: Rendered) => c.name === "token-watcher");
      if (values.length === 0) {
        expect(flat).toMatchObject({
          datastore: "kubernetes",
          kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" },
        });
        expect(watcher.args.slice(0, install.args.length)).toEqual(install.args);
      } else {
        expect(flat).toMatchObject({
          datastore: "etcd",
          etcd_host: "https://10.0.0.5:2379,https://10.0.0.6:2379",
          etcd_ca_cert_file: "/etc/ipamkit/etcd/ca.crt",
          etcd_cert_file: "/etc/ipamkit/etcd/tls.crt",
          etcd_key_file: "/etc/ipamkit/etcd/tls.key",
        });
        expect(watcher).toBeUndefined(); // no kubeconfig to keep fresh
        expect(agent.volumeMounts).toContainEqual({ name: "etcd-tls", mountPath: "/etc/ipamkit/etcd", readOnly: true });
      }
    }
  });

  it("with the etcd store: no pool RBAC for the plugin, the reconciler on etcd with the TLS files", () => {
    const objects = template(ETCD_VALUES);
    expect(objects.some((o) => o.kind === "Role" && o.metadata.name === "ipamkit-cni")).toBe(false);
    // the Lease rules only: the same as the audited manifest's
    expect(find(objects, "Role", "ipamkit-reconciler").rules).toEqual(
      rulesOf("rbac-reconciler.yaml", "Role", "ipamkit-reconciler").filter((r: Rendered) => r.apiGroups[0] === "coordination.k8s.io"),
    );
    const args = find(objects, "Deployment", "ipamkit-reconciler").spec.template.spec.containers[0].args;
    expect(args).toEqual(
      expect.arrayContaining([
        "--datastore=etcd",
        "--etcd-endpoints=https://10.0.0.5:2379,https://10.0.0.6:2379",
        "--etcd-ca-file=/etc/ipamkit/etcd/ca.crt",
        `--lease-namespace=${NAMESPACE}`,
      ]),
    );
    expect(args.some((a: string) => a.startsWith("--namespace"))).toBe(false); // the reconciler refuses it with etcd
  });
});
