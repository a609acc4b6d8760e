import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type KubeApiserver, PROJECT_CRDS, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { loadAllYaml } from "@kubernetes/client-node";
import { kubectlBinary } from "@ipamkit/node-launcher";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CHART, helmBinary, type Rendered } from "../test/helm.js";
import { removeTempDirs, run, serviceAccountVolume, tempDir } from "../test/run.js";

// charts/ipamkit with a real helm (test-infra/helm) and a real kube-apiserver: lint, template with
// the default and the etcd values, the rendered installer arguments run by the real installer,
// least-privilege RBAC identical to the audited manifests, and every rendered object applied with
// server-side dry-run (the CRDs for real).

const RBAC = join(CHART, "..", "..", "packages", "storage-kubernetes", "manifests");
const NAMESPACE = "ipamkit-system";
const ETCD_VALUES = [
  "--set",
  "store.type=etcd",
  "--set",
  "store.etcd.endpoints={https://10.0.0.5:2379,https://10.0.0.6:2379}",
  "--set",
  "store.etcd.tls.secretName=etcd-client",
];
let helm: string;
beforeAll(() => {
  helm = helmBinary();
});
afterAll(removeTempDirs);

/** helm's note that crds/crds.yaml is a symlink (to packages/storage-kubernetes/manifests/crds.yaml, so the CRDs are not forked). */
const SYMLINK_NOTE =
  /^level=INFO msg="found symbolic link in path\. Contents of linked file included and used" path=\S+crds\/crds\.yaml .*\n/gm;

/** Runs helm with a HOME of its own; stderr without the symlink note. */
function helmRun(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(helm, args, { encoding: "utf8", env: { PATH: process.env.PATH, HOME: tempDir("ipamkit-helm-home-") } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.replace(SYMLINK_NOTE, "") };
}

function template(values: string[] = [], crds = true): Rendered[] {
  const r = helmRun(["template", "ipamkit", CHART, "--namespace", NAMESPACE, ...(crds ? ["--include-crds"] : []), ...values]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return (loadAllYaml(r.stdout) as Rendered[]).filter((o) => o !== null);
}

const find = (objects: Rendered[], kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} rendered`);
  return found;
};
const rulesOf = (file: string, kind: string, name: string) =>
  ((loadAllYaml(readFileSync(join(RBAC, file), "utf8")) as Rendered[]).find((o) => o.kind === kind && o.metadata.name === name) as Rendered)
    .rules;

describe("helm lint and template", () => {
  it("lints clean with the default and the etcd values; bad values fail with the chart's message", () => {
    for (const values of [[], ETCD_VALUES]) {
      const r = helmRun(["lint", "--strict", CHART, ...values]);
      expect(r.stdout + r.stderr).not.toMatch(/\[ERROR\]|\[WARNING\]/);
      expect(r.code).toBe(0);
    }
    expect(helmRun(["template", "x", CHART, "--set", "store.type=consul"]).stderr).toContain(
      'store.type must be kubernetes or etcd, not "consul"',
    );
    expect(helmRun(["template", "x", CHART, "--set", "store.type=etcd"]).stderr).toContain("store.type etcd needs store.etcd.endpoints");
  });

  it("renders the project's CRDs unchanged and RBAC identical to the audited least-privilege manifests", () => {
    const objects = template();
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
      "Role/ipamkit-cni",
      "Role/ipamkit-reconciler",
      "RoleBinding/ipamkit-cni",
      "RoleBinding/ipamkit-reconciler",
      "ServiceAccount/ipamkit-cni",
      "ServiceAccount/ipamkit-reconciler",
    ]);
  });

  it("whereaboutsLease: the Lease grants of rbac-cni-whereabouts-lease.yaml and the flat-file key; refused with etcd", () => {
    const objects = template(["--set", "whereaboutsLease=true"], false);
    const lease = rulesOf("rbac-cni-whereabouts-lease.yaml", "Role", "ipamkit-cni-whereabouts-lease");
    expect(find(objects, "Role", "ipamkit-cni").rules).toEqual([...rulesOf("rbac-cni.yaml", "Role", "ipamkit-cni"), ...lease]);
    const install = find(objects, "DaemonSet", "ipamkit-node").spec.template.spec.initContainers[0];
    const flat = JSON.parse(install.args[install.args.indexOf("--flat-file-json") + 1]);
    expect(flat.whereabouts_lease).toBe(true);
    const off = find(template([], false), "DaemonSet", "ipamkit-node").spec.template.spec.initContainers[0];
    expect(JSON.parse(off.args[off.args.indexOf("--flat-file-json") + 1])).not.toHaveProperty("whereabouts_lease");
    expect(helmRun(["template", "x", CHART, ...ETCD_VALUES, "--set", "whereaboutsLease=true"]).stderr).toContain(
      "whereaboutsLease needs store.type kubernetes",
    );
  });

  it("the DaemonSet's installer arguments, run by the real installer, write the flat file the agent's socket and probes match", async () => {
    for (const values of [[], ETCD_VALUES]) {
      const ds = find(template(values, false), "DaemonSet", "ipamkit-node");
      const spec = ds.spec.template.spec;
      const install = spec.initContainers[0];
      const agent = spec.containers.find((c: Rendered) => c.name === "agent");
      const socket = agent.args[agent.args.indexOf("--socket") + 1];
      expect(agent.readinessProbe.exec.command).toEqual(["/usr/bin/node", "/app/dist/ipamkit-probe", "--socket", socket]);
      expect(agent.livenessProbe.exec.command).toEqual(agent.readinessProbe.exec.command);
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
    const objects = template(ETCD_VALUES, false);
    expect(objects.some((o) => o.kind === "Role" && o.metadata.name === "ipamkit-cni")).toBe(false);
    expect(find(objects, "Role", "ipamkit-reconciler").rules).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
    ]);
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

describe("server-side dry-run on a real kube-apiserver", () => {
  let api: KubeApiserver;
  beforeAll(async () => {
    api = await startKubeApiserver({ crds: [], namespaces: [NAMESPACE] });
  });
  afterAll(async () => {
    await api?.stop();
  });
  const kubectl = (args: string[], input?: string) =>
    execFileSync(kubectlBinary(), ["--kubeconfig", api.kubeconfigPath, ...args], { encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"] });

  it("helm install creates it all for real (the CRDs from crds/ first), helm uninstall removes all but the CRDs", () => {
    const kube = ["--namespace", NAMESPACE, "--kubeconfig", api.kubeconfigPath];
    const installed = helmRun(["install", "ipamkit", CHART, ...kube]);
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd/ippools.whereabouts.cni.cncf.io"]);
    const names = (kind: string) => kubectl(["get", kind, "-n", NAMESPACE, "-o", "name"]).trim().split("\n").sort();
    expect(names("daemonset,deployment,configmap")).toEqual(
      expect.arrayContaining(["configmap/ipamkit-reconciler-config", "daemonset.apps/ipamkit-node", "deployment.apps/ipamkit-reconciler"]),
    );
    expect(helmRun(["uninstall", "ipamkit", ...kube]).code).toBe(0);
    expect(kubectl(["get", "daemonset,deployment", "-n", NAMESPACE, "-o", "name"]).trim()).toBe("");
    expect(kubectl(["get", "crd", "-o", "name"])).toContain("ippools.whereabouts.cni.cncf.io"); // helm never deletes CRDs
  });

  it("the CRDs apply for real and become Established; every other object passes a server-side dry-run apply", () => {
    const crds = template().filter((o) => o.kind === "CustomResourceDefinition");
    const crdFile = join(tempDir("ipamkit-chartcrd-"), "crds.json");
    writeFileSync(crdFile, JSON.stringify({ apiVersion: "v1", kind: "List", items: crds }));
    kubectl(["apply", "--server-side", "-f", crdFile]);
    kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...crds.map((c) => `crd/${c.metadata.name}`)]);
    for (const values of [[], ETCD_VALUES, ["--set", "poolNamespace=kube-system", "--set", "reconciler.mode=watch"]]) {
      const objects = template(values, false);
      const out = kubectl(
        ["apply", "--server-side", "--dry-run=server", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
      );
      const applied = out.trim().split("\n");
      expect(applied).toHaveLength(objects.length);
      for (const line of applied) expect(line).toMatch(/ serverside-applied \(server dry run\)$/);
    }
  });
});
