import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { DEFAULT_FLAT_FILE_PATHS } from "../../../packages/cni/src/config-paths.js";
import { ALL_ON, container, ETCD_VALUES, find, helmRun, NAMESPACE, nodePod, reconcilerPod, refusal, template } from "../test/chart.js";
import { CHART, type Rendered } from "../test/helm.js";
import { exited, removeTempDirs, start, tempDir, until } from "../test/run.js";
import { DEFAULT_CNI_CACHE_DIRS } from "./install-args.js";
import { NODE_CACHES, NODE_FILES } from "./install-run.js";

// The values an operator sets on charts/ipamkit, rendered by a real helm (test-infra/helm): what
// values.schema.json refuses, and what each value puts into the objects.

afterAll(removeTempDirs);
const SCHEMA = JSON.parse(readFileSync(join(CHART, "values.schema.json"), "utf8"));
const SCHEMA_ERROR = "values don't meet the specifications of the schema";

describe("values.schema.json refuses what the programs cannot serve", () => {
  it("cni.confDir: only the directories whose whereabouts.d/whereabouts.conf the plugin finds by itself", () => {
    const searched = DEFAULT_FLAT_FILE_PATHS.filter((p) => !p.startsWith("/host/")).map((p) =>
      p.replace(/\/whereabouts\.d\/whereabouts\.conf$/, ""),
    );
    expect(SCHEMA.properties.cni.then.properties.confDir.enum).toEqual(searched);
    expect(() => template(["--set", "cni.confDir=/etc/kubernetes/cni/net.d"])).not.toThrow();
    for (const bad of ["/etc/cni/other", "etc/cni/net.d"]) {
      expect(refusal(["--set", `cni.confDir=${bad}`])).toMatch(
        /at '\/cni\/confDir': value must be one of '\/etc\/kubernetes\/cni\/net\.d', '\/etc\/cni\/net\.d'/,
      );
    }
    // a runtime whose environment names the flat file (IPAMKIT_CONFIGURATION_PATH): any clean absolute path
    const own = nodePod(template(["--set", "cni.confDir=/var/lib/cni-conf", "--set", "cni.runtimeNamesConfigurationPath=true"]));
    expect(container(own, "install").args).toEqual(expect.arrayContaining(["--cni-conf-dir", "/var/lib/cni-conf"]));
    expect(container(own, "agent").env).toContainEqual({ name: "IPAMKIT_CONFIGURATION_PATH", value: "/var/lib/cni-conf/whereabouts.d" });
    expect(refusal(["--set", "cni.confDir=etc/cni", "--set", "cni.runtimeNamesConfigurationPath=true"])).toContain("at '/cni/confDir'");
  });

  it("cni.binaryNames: file names only, none a standard CNI plugin's or one of ipamkit's Node files, at least one", () => {
    const refused = SCHEMA.properties.cni.properties.binaryNames.items.not.enum as string[];
    expect(refused).toEqual(
      expect.arrayContaining([...NODE_FILES.filter((f) => f !== "ipamkit-node"), "ipamkit-node", "bridge", "macvlan", "host-local"]),
    );
    expect(NODE_CACHES.every((f) => !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(f) || refused.includes(f) || f.endsWith(".v8cache"))).toBe(true);
    expect(refusal(["--set", "cni.binaryNames={bridge}"])).toContain("at '/cni/binaryNames/0'");
    expect(refusal(["--set", "cni.binaryNames={../x}"])).toContain("at '/cni/binaryNames/0'");
    expect(refusal(["--set", "cni.binaryNames=null"])).toContain(SCHEMA_ERROR);
    expect(refusal(["--set", "cni.binaryNames={ipamkit,ipamkit}"])).toContain("at '/cni/binaryNames'");
  });

  it("paths, a socket path longer than a Unix socket address, digests, log levels, durations, unknown keys", () => {
    expect(refusal(["--set", "cni.binDir=/opt/cni/../bin"])).toContain("at '/cni/binDir'");
    expect(refusal(["--set", `agent.socketDir=/run/${"x".repeat(100)}`])).toContain("at '/agent/socketDir'");
    expect(refusal(["--set", "image.digest=latest"])).toContain("at '/image/digest'");
    expect(refusal(["--set", "agent.logLevel=loud"])).toContain("at '/agent/logLevel'");
    expect(refusal(["--set", "reconciler.grace=5 minutes"])).toContain("at '/reconciler/grace'");
    expect(refusal(["--set", "reconciler.schedule=daily"])).toContain("at '/reconciler/schedule'");
    expect(refusal(["--set", "agent.metrics.port=70000"])).toContain("at '/agent/metrics/port'");
    expect(refusal(["--set", "agnet.required=false"])).toMatch(/additional properties 'agnet' not allowed/);
    expect(refusal(["--set", "daemonset.extraEnv[0].value=x"])).toContain("at '/daemonset/extraEnv/0'");
    expect(refusal(["--set", "daemonset.podAnnotations.a=1"])).toContain("at '/daemonset/podAnnotations/a': got number, want string");
  });
});

describe("what the values render", () => {
  it("metrics on by default: the agent on the node's address, the reconciler's port, headless Services, probes on /healthz", () => {
    const objects = template();
    const pod = nodePod(objects);
    const agent = container(pod, "agent");
    const at = agent.args.indexOf("--metrics-address");
    expect(agent.args[at + 1]).toBe("[$(POD_IP)]:9464");
    expect(agent.env).toContainEqual({ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } });
    expect(agent.ports).toEqual([{ name: "metrics", containerPort: 9464, protocol: "TCP" }]);
    expect(agent.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    const socketProbe = ["/usr/bin/node", "/app/dist/ipamkit-probe", "--socket", "/run/ipamkit/agent.sock"];
    expect(agent.readinessProbe.exec.command).toEqual(socketProbe);
    expect(agent.startupProbe).toMatchObject({ exec: { command: socketProbe }, periodSeconds: 2, failureThreshold: 60 });

    const reconciler = container(reconcilerPod(objects), "reconciler");
    expect(reconciler.args).toContain("--metrics-address=:9465");
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"])
      expect(reconciler[probe].httpGet).toEqual({ path: "/healthz", port: "metrics" });
    for (const [name, component, port] of [
      ["ipamkit-node-metrics", "ipamkit-node", 9464],
      ["ipamkit-reconciler-metrics", "ipamkit-reconciler", 9465],
    ] as const) {
      const svc = find(objects, "Service", name);
      expect(svc.spec).toEqual({
        clusterIP: "None",
        selector: { "app.kubernetes.io/instance": "ipamkit", "app.kubernetes.io/name": component },
        ports: [{ name: "metrics", port, targetPort: "metrics", protocol: "TCP" }],
      });
      expect(svc.metadata.labels?.["app.kubernetes.io/component"]).toBe("metrics");
    }

    const off = template(["--set", "agent.metrics.enabled=false"]);
    const quiet = container(nodePod(off), "agent");
    expect(quiet.args).not.toContain("--metrics-address");
    expect(quiet.ports).toBeUndefined();
    expect(quiet.livenessProbe.exec.command).toEqual(socketProbe);
    expect(off.some((o) => o.metadata.name === "ipamkit-node-metrics")).toBe(false);
  });

  it("the real agent runs with the rendered arguments as the kubelet expands them, its /healthz and /metrics on the node's address", async () => {
    const agent = container(nodePod(template()), "agent");
    const dir = tempDir("ipamkit-chart-agent-");
    // $(NODE_NAME) and $(POD_IP) as the kubelet expands them; the socket and a free port this test's own
    const args = (agent.args as string[]).map((a) =>
      a
        .replace("$(NODE_NAME)", "node-a")
        .replace("$(POD_IP)", "127.0.0.1")
        .replace(":9464", ":0")
        .replace("/run/ipamkit/agent.sock", join(dir, "agent.sock")),
    );
    expect(args).toContain("[127.0.0.1]:0");
    const process = start(join(inject("pluginDist"), "ipamkit-agent"), args, {});
    try {
      await until("the agent's metrics listener", () => process.output().includes('"msg":"metrics listening"'), 20_000);
      const line = process
        .output()
        .split("\n")
        .find((l) => l.includes('"msg":"metrics listening"')) as string;
      const url = (JSON.parse(line) as { url: string }).url;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}${agent.livenessProbe.httpGet.path}`)).status).toBe(200);
      expect(await (await fetch(`${url}/metrics`)).text()).toContain("# TYPE ipamkit_cni_calls_total counter");
    } finally {
      process.child.kill("SIGTERM");
      await exited(process.child);
    }
  });

  it("seccompProfile RuntimeDefault on every pod, Linux nodes, the reconciler's priority class and PodDisruptionBudget", () => {
    const objects = template();
    for (const pod of [nodePod(objects), reconcilerPod(objects)]) {
      expect(pod.securityContext.seccompProfile).toEqual({ type: "RuntimeDefault" });
      expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    }
    expect(reconcilerPod(objects).priorityClassName).toBe("system-cluster-critical");
    expect(find(objects, "PodDisruptionBudget", "ipamkit-reconciler").spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: { "app.kubernetes.io/instance": "ipamkit", "app.kubernetes.io/name": "ipamkit-reconciler" } },
    });
    const without = template(["--set", "reconciler.podDisruptionBudget.enabled=false", "--set", "reconciler.priorityClassName="]);
    expect(without.some((o) => o.kind === "PodDisruptionBudget")).toBe(false);
    expect(reconcilerPod(without).priorityClassName).toBeUndefined();
  });

  it("the reconciler's Lease rule names its Lease, which its arguments name too", () => {
    const objects = template(["--set", "reconciler.leaseName=ipam-leader"]);
    const rules = find(objects, "Role", "ipamkit-reconciler").rules.filter((r: Rendered) => r.resources.includes("leases"));
    expect(rules).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], resourceNames: ["ipam-leader"], verbs: ["get", "update"] },
    ]);
    expect(container(reconcilerPod(objects), "reconciler").args).toContain("--lease-name=ipam-leader");
  });

  it("extraEnv reaches every container of its pod (init container included), extraArgs and podAnnotations theirs, image.digest every image", () => {
    const env = { name: "KUBERNETES_SERVICE_HOST", value: "10.0.0.1" };
    const objects = template([
      "--set-json",
      `daemonset.extraEnv=${JSON.stringify([env, { name: "KUBERNETES_SERVICE_PORT", value: "6443" }])}`,
      "--set-json",
      `reconciler.extraEnv=${JSON.stringify([env])}`,
      "--set-json",
      'daemonset.extraArgs=["--idle-timeout","30"]',
      "--set-json",
      'reconciler.extraArgs=["--claim-settle=10s"]',
      "--set-string",
      "daemonset.podAnnotations.a=1",
      "--set-string",
      "reconciler.podAnnotations.b=2",
      ...ALL_ON,
    ]);
    const node = nodePod(objects);
    const all = [...node.initContainers, ...node.containers];
    expect(all.map((c: Rendered) => c.name)).toEqual(["install", "agent", "token-watcher"]);
    for (const c of all) expect(c.env).toEqual(expect.arrayContaining([env, { name: "KUBERNETES_SERVICE_PORT", value: "6443" }]));
    expect(container(reconcilerPod(objects), "reconciler").env).toContainEqual(env);
    expect(container(node, "agent").args.slice(-2)).toEqual(["--idle-timeout", "30"]);
    expect(container(reconcilerPod(objects), "reconciler").args.at(-1)).toBe("--claim-settle=10s");
    expect(find(objects, "DaemonSet", "ipamkit-node").spec.template.metadata.annotations).toEqual({ a: "1" });
    expect(find(objects, "Deployment", "ipamkit-reconciler").spec.template.metadata.annotations).toEqual({ b: "2" });
    const images = [...all, ...reconcilerPod(objects).containers].map((c: Rendered) => c.image);
    expect(new Set(images)).toEqual(new Set(["ipamkit@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]));
    expect(container(nodePod(template(["--set", "image.tag=v2"])), "agent").image).toBe("ipamkit:v2");
  });

  it("cni.uninstall: the watcher (with either store) removes the files when it stops, reading the CNI caches read-only", () => {
    for (const values of [[], ETCD_VALUES]) {
      const pod = nodePod(template([...values, "--set", "cni.uninstall=true"]));
      const watcher = container(pod, "token-watcher");
      expect(watcher.args).toEqual(expect.arrayContaining(["--watch", "--uninstall-on-exit"]));
      expect(watcher.volumeMounts).toEqual(
        expect.arrayContaining([
          { name: "cni-bin", mountPath: "/host/opt/cni/bin" },
          { name: "cni-cache", mountPath: "/host/var/lib/cni", readOnly: true },
        ]),
      );
      // the installer's default caches lie beneath the mount
      for (const dir of DEFAULT_CNI_CACHE_DIRS) expect(dir.startsWith("/var/lib/cni/")).toBe(true);
      expect(pod.volumes).toContainEqual({ name: "cni-cache", hostPath: { path: "/var/lib/cni", type: "DirectoryOrCreate" } });
    }
    expect(nodePod(template()).containers.find((c: Rendered) => c.name === "token-watcher").args).not.toContain("--uninstall-on-exit");
    expect(nodePod(template(ETCD_VALUES)).containers.map((c: Rendered) => c.name)).toEqual(["agent"]);
  });

  it("NOTES.txt says what uninstall leaves where, and how to remove the node files", () => {
    const notes = (values: string[]) => {
      const r = helmRun(["install", "ipamkit", CHART, "--namespace", NAMESPACE, "--dry-run=client", ...values]);
      expect(r.code).toBe(0);
      return r.stdout.slice(r.stdout.indexOf("NOTES:"));
    };
    const off = notes(["--set", "cni.binaryNames={ipamkit,whereabouts}"]);
    expect(off).toContain("/opt/cni/bin/ipamkit /opt/cni/bin/whereabouts");
    expect(off).toContain("/etc/cni/net.d/whereabouts.d/ (whereabouts.conf, nodename, whereabouts.kubeconfig)");
    expect(off).toContain("--reuse-values --set cni.uninstall=true");
    expect(off).toContain("the CRDs and every IPPool and reservation in ipamkit-system, and the Lease ipamkit-reconciler");
    const on = notes(["--set", "cni.uninstall=true"]);
    expect(on).toContain("where a pod still uses an ipamkit network (cni.uninstall is on: elsewhere they are removed)");
    expect(on).not.toContain("--set cni.uninstall=true");
  });
});
