import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { type EtcdInstance, freePort, makeTestCertificates, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lines, NET, plantDuplicate, runBin, seedClean, WIDE } from "./test-support.js";

// The built binary, as a process, on a real etcd and on a real kube-apiserver (its own etcd).

interface Backend {
  name: string;
  start(): Promise<{ store: IpamStore; args: string[]; podUid?: string; stop(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: "etcd",
    async start() {
      const running: EtcdInstance = await startEtcd();
      const store = createEtcdStore({ endpoints: [running.endpoint] });
      return { store, args: ["--etcd-endpoints", running.endpoint], stop: () => store.close().then(() => running.stop()) };
    },
  },
  {
    name: "kubernetes",
    async start() {
      const running: KubeApiserver = await startKubeApiserver();
      const pod = await running.kubeConfig.makeApiClient(CoreV1Api).createNamespacedPod({
        namespace: "default",
        body: { metadata: { name: "pod-a" }, spec: { containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }] } },
      });
      const store = createKubernetesStore({ kubeconfig: running.kubeConfig, namespace: "kube-system" });
      const podUid = pod.metadata?.uid ?? "";
      return {
        store,
        args: ["--kubeconfig", running.kubeconfigPath],
        podUid,
        stop: () => store.close().then(() => running.stop()),
      };
    },
  },
];

describe.each(backends)("ipamkit on the $name store", (backend) => {
  let store: IpamStore;
  let args: string[];
  let stop: () => Promise<void>;
  let podUid: string | undefined;
  beforeAll(async () => {
    ({ store, args, stop, podUid } = await backend.start());
    await seedClean(store, podUid === undefined ? {} : { uid: podUid });
  }, 180_000);
  afterAll(async () => {
    await stop?.();
  });

  it("audit: a clean store exits 0; pools lists both overlapping pools", async () => {
    const r = await runBin(["audit", ...args, "--grace", "0", "--settle", "0"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^clean: 2 pool\\(s\\), 3 reservation\\(s\\); claims checked, pods ${podUid === undefined ? "not " : ""}checked`),
    );
    const pools = await runBin(["pools", ...args]);
    expect(pools.code, pools.stderr).toBe(0);
    expect(pools.stdout).toMatch(/net-a\s+10\.20\.0\.0\/24\s+2\s+254\s+0\.8%/);
    expect(pools.stdout).toMatch(/net-a\s+10\.20\.0\.0\/25\s+1\s+126\s+0\.8%/);
  });

  it("release --dry-run changes nothing; release frees exactly the key", async () => {
    const ref = { network: NET, cidr: WIDE.cidr.text };
    const before = await store.readPool(ref);
    const dry = await runBin(["release", ...args, "--key", "ctr-b/net1", "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would-release\s+net-a\/10\.20\.0\.0\/24\s+10\.20\.0\.2\s+ctr-b\/net1/);
    expect((await store.readPool(ref))?.version).toBe(before?.version);
    const done = await runBin(["release", ...args, "--key", "ctr-b/net1"]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/released\s+net-a\/10\.20\.0\.0\/24\s+10\.20\.0\.2\s+ctr-b\/net1/);
    const after = await store.readPool(ref);
    expect(after?.pool.reservations().map((r) => r.key.containerId)).toEqual(["ctr-a"]);
    expect(await store.readClaim({ network: NET, address: "10.20.0.2" })).toBeUndefined();
    expect(await store.readClaim({ network: NET, address: "10.20.0.1" })).toBeDefined();
  });

  it("audit: a duplicate planted across two overlapping pools is reported, exit 1", async () => {
    await plantDuplicate(store);
    const r = await runBin(["audit", ...args, "--json", "--grace", "0", "--settle", "0"]);
    expect(r.code, r.stderr).toBe(1);
    const { findings } = JSON.parse(r.stdout) as { findings: { kind: string; address?: string; pool?: string }[] };
    expect(findings).toContainEqual(
      expect.objectContaining({ kind: "held-twice", address: "10.20.0.1", pool: "net-a/10.20.0.0/24, net-a/10.20.0.0/25" }),
    );
    if (podUid !== undefined) {
      // the planted entry names default/pod-x, which does not exist: the reconciler's verdict
      expect(findings).toContainEqual(expect.objectContaining({ kind: "pod-gone", address: "10.20.0.1", pool: "net-a/10.20.0.0/25" }));
      const noPods = await runBin(["audit", ...args, "--grace", "0", "--settle", "0", "--no-pods"]);
      expect(noPods.code).toBe(1);
      expect(noPods.stdout).not.toMatch(/pod-gone/);
      expect(noPods.stdout).toMatch(/pods not checked \(--no-pods\)$/m);
    }
  });
});

describe("etcd over mutual TLS", () => {
  it("reads with --etcd-ca-file/--etcd-cert-file/--etcd-key-file; without a client certificate, one line, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-cli-tls-"));
    const tls = makeTestCertificates(dir);
    const etcd = await startEtcd({ tls });
    const store = createEtcdStore({
      endpoints: [etcd.endpoint],
      tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey },
    });
    try {
      await seedClean(store);
      const args = ["--etcd-endpoints", etcd.endpoint, "--etcd-ca-file", tls.ca];
      const r = await runBin(["pools", ...args, "--etcd-cert-file", tls.clientCert, "--etcd-key-file", tls.clientKey, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { pools: { used: number }[] }).pools.map((p) => p.used)).toEqual([2, 1]);
      const denied = await runBin(["pools", ...args]);
      expect(denied.code).toBe(2);
      expect(lines(denied.stderr)).toHaveLength(1);
      expect(denied.stderr).toMatch(/^error: .*etcd unavailable/);
    } finally {
      await store.close();
      await etcd.stop();
    }
  });
});

describe("store errors: one line, exit 2", () => {
  it("an unreachable etcd", async () => {
    const port = await freePort();
    const r = await runBin(["pools", "--etcd-endpoints", `http://127.0.0.1:${port}`]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: .*etcd unavailable/);
  });

  it("a bad kubeconfig, and an unreachable kube-apiserver", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-cli-kc-"));
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "apiVersion: v1\nclusters: [: oops\n");
    const r = await runBin(["audit", "--kubeconfig", bad]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: bad kubeconfig: .*cannot load kubeconfig/);

    const port = await freePort();
    const unreachable = join(dir, "unreachable.yaml");
    writeFileSync(
      unreachable,
      [
        "apiVersion: v1",
        "kind: Config",
        `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
        "users: [{name: u, user: {token: abcd}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
      ].join("\n"),
    );
    const down = await runBin(["pools", "--kubeconfig", unreachable]);
    expect(down.code).toBe(2);
    expect(lines(down.stderr)).toHaveLength(1);
    expect(down.stderr).toMatch(/^error: .*(unavailable|ECONNREFUSED)/i);
  });
});
