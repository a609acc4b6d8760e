import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { attachmentKey, createIpam, parseRange } from "@ipamkit/core";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { createKubernetesStore, ipPoolName } from "@ipamkit/storage-kubernetes";
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  V1MicroTime,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { onNode, useNode } from "../../cni-plugin/test/node-files.js";
import { RECONCILER, scratchDir } from "../test/campaign.js";
import { runBinary } from "../test/subprocess.js";

// The RBAC part of the security review (RELIABILITY.md), on a real kube-apiserver with RBAC on:
// the project's manifests (rbac-cni.yaml, rbac-reconciler.yaml) are applied as they ship, the two
// ServiceAccounts get tokens, and the built CNI binary and the built reconciler do everything they
// do — ADD (overlapping-range claims, a dangling claim taken over, per-node blocks, node slices), CHECK, DEL,
// GC, STATUS; a reconcile pass that releases 33 orphans (their reservation records read in one
// list) and keeps the node slices (`--node-slices true`), the pod-watch controller with its Lease.
// The API server's audit log then shows every request each account made: none was refused (403),
// and every verb the manifests grant was used — nothing granted is left unused.

const MANIFESTS = join(import.meta.dirname, "..", "..", "..", "packages", "storage-kubernetes", "manifests");
const CNI_USER = "system:serviceaccount:kube-system:ipamkit-cni";
const RECONCILER_USER = "system:serviceaccount:kube-system:ipamkit-reconciler";

const dir = scratchDir("rbac");
useNode(scratchDir("rbac-node"));
const auditLog = join(dir, "audit.log");
let server: KubeApiserver;

beforeAll(async () => {
  const policy = join(dir, "audit-policy.yaml");
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n');
  server = await startKubeApiserver({ args: [`--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`], namespaces: ["apps"] });
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

type Manifest = KubernetesObject & { rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[] };
const manifest = (file: string) => loadAllYaml(readFileSync(join(MANIFESTS, file), "utf8")) as Manifest[];

/** `group/resource:verb` for every grant of the manifest's Roles and ClusterRoles. */
function granted(objects: Manifest[]): Set<string> {
  const out = new Set<string>();
  for (const o of objects) {
    if (o.kind !== "Role" && o.kind !== "ClusterRole") continue;
    for (const rule of o.rules ?? [])
      for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) out.add(`${g}/${r}:${v}`);
  }
  return out;
}

/** A kubeconfig for a ServiceAccount's token (no namespace: the plugin's default, kube-system). */
async function accountKubeconfig(name: string): Promise<string> {
  const core = server.kubeConfig.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace: "kube-system",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: server.url, "certificate-authority-data": Buffer.from(server.ca).toString("base64") } }],
      users: [{ name, user: { token: request.status?.token } }],
      contexts: [{ name: "x", context: { cluster: "c", user: name } }],
      "current-context": "x",
    }),
    { mode: 0o600 },
  );
  return path;
}

function reconciler(args: string[], runMs?: number): Promise<{ code: number | null; log: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RECONCILER, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "" },
    });
    let log = "";
    child.stdout.on("data", (d) => {
      log += d;
    });
    child.stderr.on("data", (d) => {
      log += d;
    });
    const stop = runMs === undefined ? undefined : setTimeout(() => child.kill("SIGTERM"), runMs);
    const kill = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("close", (code) => {
      clearTimeout(stop);
      clearTimeout(kill);
      resolve({ code, log });
    });
  });
}

/** Per account, every `group/resource:verb` it requested and every status it got, from the audit log. */
function audited(): Map<string, { used: Set<string>; statuses: Map<string, Set<number>> }> {
  const out = new Map<string, { used: Set<string>; statuses: Map<string, Set<number>> }>();
  for (const line of readFileSync(auditLog, "utf8").split("\n")) {
    if (line === "") continue;
    const e = JSON.parse(line) as {
      user?: { username?: string };
      verb?: string;
      objectRef?: { apiGroup?: string; resource?: string; subresource?: string };
      responseStatus?: { code?: number };
    };
    const user = e.user?.username ?? "";
    if (e.objectRef?.resource === undefined || e.verb === undefined) continue;
    const resource = `${e.objectRef.resource}${e.objectRef.subresource === undefined ? "" : `/${e.objectRef.subresource}`}`;
    const key = `${e.objectRef.apiGroup ?? ""}/${resource}:${e.verb}`;
    const entry = out.get(user) ?? { used: new Set<string>(), statuses: new Map<string, Set<number>>() };
    entry.used.add(key);
    const statuses = entry.statuses.get(key) ?? new Set<number>();
    statuses.add(e.responseStatus?.code ?? 0);
    entry.statuses.set(key, statuses);
    out.set(user, entry);
  }
  return out;
}

it("the CNI plugin and the reconciler on their shipped RBAC: nothing refused, nothing granted left unused", {
  timeout: 300_000,
}, async () => {
  const admin = KubernetesObjectApi.makeApiClient(server.kubeConfig);
  // with the Lease grants of `whereabouts_lease: true`, used by two ADDs below
  const cniManifest = [...manifest("rbac-cni.yaml"), ...manifest("rbac-cni-whereabouts-lease.yaml")];
  // with the node-slice grants of `--node-slices true`, used by the reconciler's --once pass below
  const reconcilerManifest = [...manifest("rbac-reconciler.yaml"), ...manifest("rbac-reconciler-node-slices.yaml")];
  for (const object of [...cniManifest, ...reconcilerManifest]) await admin.create(object);
  const cniKubeconfig = await accountKubeconfig("ipamkit-cni");
  const reconcilerKubeconfig = await accountKubeconfig("ipamkit-reconciler");

  const core = server.kubeConfig.makeApiClient(CoreV1Api);
  const live = await core.createNamespacedPod({
    namespace: "apps",
    body: { metadata: { name: "live" }, spec: { containers: [{ name: "app", image: "registry.example/app:1" }] } },
  });
  await core.replaceNamespacedPodStatus({ namespace: "apps", name: "live", body: { ...live, status: { phase: "Running" } } });

  const range = "10.67.0.0/24";
  const conf = (extra: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
    cniVersion: "1.1.0",
    name: "rbac-net",
    // the kubeconfig is a node-level key (issue 47): the node's flat file
    ipam: onNode({ type: "ipamkit", range, kubernetes: { kubeconfig: cniKubeconfig }, ...extra }),
    ...top,
  });
  const cni = async (command: string, id: string, c: object, pod?: { name: string; uid: string }, node?: string) => {
    const env = {
      ...(node === undefined ? {} : { NODENAME: node }),
      CNI_COMMAND: command,
      CNI_CONTAINERID: id,
      CNI_IFNAME: "net1",
      CNI_NETNS: "/var/run/netns/x",
      CNI_PATH: "/opt/cni/bin",
      ...(pod === undefined ? {} : { CNI_ARGS: `K8S_POD_NAMESPACE=apps;K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}` }),
    };
    const r = await runBinary(env, Buffer.from(JSON.stringify(c)), { boundMs: 60_000 });
    expect(r.exitCode, `${command} ${id}: ${r.stdout}${r.stderr}`).toBe(0);
    return r.stdout === "" ? undefined : (JSON.parse(r.stdout) as { ips: { address: string }[] });
  };

  // the plugin: every verb, claims included
  const first = await cni("ADD", "c1", conf(), { name: "live", uid: live.metadata?.uid ?? "" });
  await cni("ADD", "c1", conf(), { name: "live", uid: live.metadata?.uid ?? "" });
  await cni("CHECK", "c1", conf({}, { prevResult: first }));
  await cni("ADD", "c2", conf(), { name: "gone", uid: "gone-uid" });
  await cni("DEL", "c2", conf());
  await cni("STATUS", "status", conf());
  await cni("GC", "gc", conf({}, { "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "net1" }] }));
  // a dangling claim (its reservation lost, as after a crash between the two writes) is taken over
  const c3 = await cni("ADD", "c3", conf());
  const custom = server.kubeConfig.makeApiClient(CustomObjectsApi);
  const where = {
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    namespace: "kube-system",
    plural: "ippools",
    name: ipPoolName({ network: "", cidr: range }),
  };
  const pool = (await custom.getNamespacedCustomObject(where)) as { spec: { allocations: Record<string, unknown> } };
  const offset = String(Number((c3?.ips[0]?.address ?? "").split("/")[0]?.split(".")[3]));
  delete pool.spec.allocations[offset];
  await custom.replaceNamespacedCustomObject({ ...where, body: pool });
  expect((await cni("ADD", "c4", conf()))?.ips[0]?.address).toBe(c3?.ips[0]?.address);
  // a Whereabouts-written reservation (no ipamkit annotations): its holder is found by listing the pools
  await custom.createNamespacedCustomObject({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    namespace: "kube-system",
    plural: "overlappingrangeipreservations",
    body: {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "OverlappingRangeIPReservation",
      metadata: { name: "10.67.0.50" },
      spec: { podref: "apps/legacy", ifname: "net1", containerid: "legacy" },
    },
  });
  expect((await cni("ADD", "c6", conf({}, { runtimeConfig: { ips: ["10.67.0.50"] } })))?.ips[0]?.address).toBe("10.67.0.50/24");
  // node slices: the node's slice read from its NodeSlicePool; a Whereabouts-written slice pool (no
  // ipamkit annotations) makes a listing of the pools read the NodeSlicePools — here the DEL of a
  // node without a slice, which looks for its key in the node's own pools (and the reconciler's pass)
  const whereabouts = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: "kube-system" };
  await custom.createNamespacedCustomObject({
    ...whereabouts,
    plural: "nodeslicepools",
    body: {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "NodeSlicePool",
      metadata: { name: "slicenet" },
      spec: { range: "10.69.0.0/22", sliceSize: "/24" },
      status: {
        allocations: [
          { nodeName: "node-r", sliceRange: "10.69.0.0/24" },
          { nodeName: "node-w", sliceRange: "10.69.1.0/24" },
          { nodeName: "", sliceRange: "10.69.2.0/24" },
        ],
      },
    },
  });
  await custom.createNamespacedCustomObject({
    ...whereabouts,
    plural: "ippools",
    body: {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "IPPool",
      metadata: { name: "slicenet-node-w-10.69.1.0-24" },
      // the live pod's, so the reconciler's pass keeps it
      spec: { range: "10.69.1.0/24", allocations: { "1": { id: "wb", podref: "apps/live", ifname: "net1" } } },
    },
  });
  // without its claim (Whereabouts with overlapping ranges off writes none): the reconciler's
  // repair creates it, named as Whereabouts names it (`<network_name>-<address>`)
  const sliced = conf({ range: "10.69.0.0/22", node_slice_size: "/24", network_name: "slicenet", whereabouts_lease: false });
  expect((await cni("ADD", "s1", sliced, undefined, "node-r"))?.ips[0]?.address).toBe("10.69.0.1/22");
  await cni("DEL", "s1", sliced, undefined, "node-gone");
  // whereabouts_lease: Whereabouts' Lease created by the first ADD, then read and updated
  await cni("ADD", "l1", conf({ whereabouts_lease: true }));
  await cni("ADD", "l2", conf({ whereabouts_lease: true }));
  // the default (auto) holds it too once Whereabouts is seen writing it: read and updated, never created
  const coordination = server.kubeConfig.makeApiClient(CoordinationV1Api);
  const lease = await coordination.readNamespacedLease({ name: "whereabouts", namespace: "kube-system" });
  const now = new V1MicroTime(Date.now());
  await coordination.replaceNamespacedLease({
    name: "whereabouts",
    namespace: "kube-system",
    body: { ...lease, spec: { ...lease.spec, holderIdentity: "", renewTime: now, acquireTime: now } },
  });
  const auditedBefore = readFileSync(auditLog, "utf8").length;
  await cni("ADD", "w1", conf());
  const leaseWrites = readFileSync(auditLog, "utf8")
    .slice(auditedBefore)
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { verb?: string; user?: { username?: string }; objectRef?: { resource?: string; name?: string } })
    .filter((e) => e.user?.username === CNI_USER && e.objectRef?.resource === "leases")
    .map((e) => `${e.verb} ${e.objectRef?.name}`);
  expect(new Set(leaseWrites)).toEqual(new Set(["get whereabouts", "update whereabouts"]));
  // per-node blocks: affinity claims
  await cni("ADD", "b1", conf({ range: "10.68.0.0/26", node_block_size: 4, node_name: "node-a" }));
  // an orphan for the reconciler
  await cni("ADD", "c5", conf(), { name: "gone", uid: "gone-uid" });
  // and 32 more attachments of that pod, placed through the library as the admin (32 CNI processes
  // would cost half a minute): a mass release, whose overlapping-range records the reconciler reads
  // in one list (one pod: it is still re-read by a GET)
  const placing = createIpam({ store: createKubernetesStore({ kubeconfig: server.kubeConfig, namespace: "kube-system" }) });
  for (let i = 0; i < 32; i++)
    await placing.allocate({
      ranges: [parseRange({ range })],
      key: attachmentKey({ containerId: `mass-${i}`, ifName: "net1" }),
      podRef: "apps/gone",
      podUid: "gone-uid",
    });

  // the reconciler: one pass that releases the orphans, then the controller with leader election
  // (and keeps the node slices: node-new, a node without a slice, gets the free one; node-w is gone
  // but its slice still holds an address, so it stays)
  for (const name of ["node-r", "node-new"]) await core.createNode({ body: { metadata: { name } } });
  const once = await reconciler(["--kubeconfig", reconcilerKubeconfig, "--once", "--grace", "0s", "--node-slices", "true"]);
  expect(once.code, once.log).toBe(0);
  expect(once.log).toContain('"released":33');
  expect(once.log).toMatch(/"node":"node-new","slice":"10\.69\.2\.0\/24".*"msg":"node slice assigned"/);
  // the live slice entry's claim, repaired (create)
  const repaired = (await custom.getNamespacedCustomObject({
    ...whereabouts,
    plural: "overlappingrangeipreservations",
    name: "slicenet-10.69.1.1",
  })) as { spec: { podref: string } };
  expect(repaired.spec.podref).toBe("apps/live");
  // one more orphan, for the controller's first pass: one release, its record read by a GET
  await cni("ADD", "c7", conf(), { name: "gone", uid: "gone-uid" });
  const watching = await reconciler(
    ["--kubeconfig", reconcilerKubeconfig, "--watch", "--resync", "1s", "--grace", "0s", "--identity", "r1"],
    6_000,
  );
  expect(watching.log).toContain("became leader");
  expect(watching.log).toContain("released lease");
  expect(watching.log).toContain('"released":1');

  const seen = audited();
  const report: string[] = [];
  for (const [user, objects] of [
    [CNI_USER, cniManifest],
    [RECONCILER_USER, reconcilerManifest],
  ] as const) {
    const entry = seen.get(user);
    expect(entry, `no request of ${user} in the audit log`).toBeDefined();
    const used = entry?.used ?? new Set<string>();
    const refused = [...(entry?.statuses ?? [])].filter(([, codes]) => codes.has(403)).map(([k]) => k);
    const grants = granted(objects);
    report.push(`${user}: used ${[...used].sort().join(" ")}; granted ${[...grants].sort().join(" ")}`);
    expect(refused, `${user} was refused`).toEqual([]);
    expect([...used].filter((k) => !grants.has(k)).sort(), `${user} used what is not granted`).toEqual([]);
    expect([...grants].filter((k) => !used.has(k)).sort(), `${user} is granted what it never uses`).toEqual([]);
  }
  console.log(`rbac (kube-apiserver ${server.versions.kubernetes}, started in ${server.startMs} ms):\n  ${report.join("\n  ")}`);
});
