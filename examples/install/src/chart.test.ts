import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_CRDS } from "@ipamkit/kube-apiserver-launcher";
import { loadAllYaml } from "@kubernetes/client-node";
import { afterAll, describe, expect, inject, it } from "vitest";
import { parseOptions } from "../../cron-reconciler/src/args.js";
import { ALL_ON, container, ETCD_VALUES, find, helmRun, NAMESPACE, nodePod, reconcilerPod, refusal, template } from "../test/chart.js";
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

  it("whereaboutsLease: auto (the default) and true grant Whereabouts' Lease as the audited manifests; false none; refused with etcd", () => {
    const flatOf = (objects: Rendered[]) => {
      const install = nodePod(objects).initContainers[0];
      return JSON.parse(install.args[install.args.indexOf("--flat-file-json") + 1]);
    };
    const leaseRules = (objects: Rendered[]) =>
      find(objects, "Role", "ipamkit-cni").rules.filter((r: Rendered) => r.resources.includes("leases"));
    // auto: get and update by name (rbac-cni.yaml), no flat-file key (the plugin's own default)
    const auto = template();
    expect(leaseRules(auto)).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["whereabouts"], verbs: ["get", "update"] },
    ]);
    expect(flatOf(auto)).not.toHaveProperty("whereabouts_lease");
    // true: and create, from rbac-cni-whereabouts-lease.yaml
    const on = template(["--set", "whereaboutsLease=true"]);
    const create = rulesOf("rbac-cni-whereabouts-lease.yaml", "Role", "ipamkit-cni-whereabouts-lease");
    expect(find(on, "Role", "ipamkit-cni").rules).toEqual([...rulesOf("rbac-cni.yaml", "Role", "ipamkit-cni"), ...create]);
    expect(flatOf(on).whereabouts_lease).toBe(true);
    // false: never taken, so never granted
    const off = template(["--set", "whereaboutsLease=false"]);
    expect(leaseRules(off)).toEqual([]);
    expect(flatOf(off).whereabouts_lease).toBe(false);
    expect(refusal(["--set", "whereaboutsLease=sometimes"])).toMatch(/at '\/whereaboutsLease': value must be one of 'auto', true, false/);
    expect(helmRun(["template", "x", CHART, ...ETCD_VALUES, "--set", "whereaboutsLease=true"]).stderr).toContain(
      "whereaboutsLease needs store.type kubernetes",
    );
  });

  it("reconciler.nodeSlices: --node-slices=true and the grants of rbac-reconciler-node-slices.yaml; refused with etcd or watch", () => {
    const objects = template(["--set", "reconciler.nodeSlices=true"]);
    const args = container(reconcilerPod(objects), "reconciler").args;
    expect(args).toContain("--node-slices=true");
    // the reconciler's own parser takes the rendered arguments so (cron mode, node slices on)
    expect(parseOptions(args)).toMatchObject({ nodeSlices: true, watch: false });
    expect(find(objects, "ClusterRole", "ipamkit-reconciler-nodes").rules).toEqual(
      rulesOf("rbac-reconciler-node-slices.yaml", "ClusterRole", "ipamkit-reconciler-nodes"),
    );
    const binding = find(objects, "ClusterRoleBinding", "ipamkit-reconciler-nodes");
    expect(binding.roleRef.name).toBe("ipamkit-reconciler-nodes");
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "ipamkit-reconciler", namespace: NAMESPACE }]);
    // the NodeSlicePool rule joins the reconciler's Role in the pool namespace
    expect(find(objects, "Role", "ipamkit-reconciler").rules).toEqual(
      expect.arrayContaining(rulesOf("rbac-reconciler-node-slices.yaml", "Role", "ipamkit-reconciler-node-slices")),
    );
    // off (the default): neither the argument nor the grants
    const off = template();
    expect(container(reconcilerPod(off), "reconciler").args.some((a: string) => a.startsWith("--node-slices"))).toBe(false);
    expect(off.some((o) => o.metadata.name === "ipamkit-reconciler-nodes")).toBe(false);
    // without it the reconciler only lists NodeSlicePools (whose a Whereabouts-written pool is)
    const sliceRules = (o: typeof off) =>
      find(o, "Role", "ipamkit-reconciler").rules.filter((r: { resources: string[] }) => r.resources.includes("nodeslicepools"));
    expect(sliceRules(off).map((r: { verbs: string[] }) => r.verbs)).toEqual([["list"]]);
    for (const values of [ETCD_VALUES, ["--set", "reconciler.mode=watch"]])
      expect(refusal([...values, "--set", "reconciler.nodeSlices=true"])).toContain("reconciler.nodeSlices needs store.type kubernetes");
  });

  it('agent.journalDir: the flat file\'s agent_journal_dir, mounted into the installer and the agent; "": no journal', () => {
    const pod = nodePod(template(["--set", "agent.journalDir=/var/lib/dels"]));
    const install = container(pod, "install");
    expect(JSON.parse(install.args[install.args.indexOf("--flat-file-json") + 1]).agent_journal_dir).toBe("/var/lib/dels");
    expect(pod.volumes).toContainEqual({ name: "journal", hostPath: { path: "/var/lib/dels", type: "DirectoryOrCreate" } });
    expect(install.volumeMounts).toContainEqual({ name: "journal", mountPath: "/host/var/lib/dels" });
    expect(container(pod, "agent").volumeMounts).toContainEqual({ name: "journal", mountPath: "/var/lib/dels" });
    const none = nodePod(template(["--set", "agent.journalDir="]));
    const noneInstall = container(none, "install");
    expect(JSON.parse(noneInstall.args[noneInstall.args.indexOf("--flat-file-json") + 1])).not.toHaveProperty("agent_journal_dir");
    expect(JSON.stringify(none)).not.toContain('"journal"');
    for (const bad of ["var/lib/j", "/var/../etc", "/var/./j"])
      expect(refusal(["--set", `agent.journalDir=${bad}`])).toContain("at '/agent/journalDir'");
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
      expect(flat).toMatchObject({ agent_socket: socket, agent_required: true, agent_journal_dir: "/var/lib/ipamkit/journal" });
      // the DEL journal's directory, root-only, where the agent's mount of it is
      expect(statSync(join(host, "var/lib/ipamkit/journal")).mode & 0o777).toBe(0o700);
      expect(agent.volumeMounts).toContainEqual({ name: "journal", mountPath: flat.agent_journal_dir });
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
