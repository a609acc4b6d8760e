import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachmentKey, createIpam, type IpamStore, parseRange } from "@ipamkit/core";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runMain, startMain } from "../test/run.js";

const range = parseRange({ range: "10.9.0.0/24" });
const pool = { network: "", cidr: range.cidr.text };
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const anHourAgo = () => new Date(Date.now() - 3_600_000);

let server: KubeTestServer;
let dir: string;
let kubeconfig: string;
let kubeConfig: KubeConfig;
let store: IpamStore;
let core: CoreV1Api;

beforeEach(async () => {
  server = await startKubeTestServer({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), "ipamkit-cron-"));
  kubeconfig = join(dir, "kubeconfig");
  // no namespace in the context: pools are looked up in kube-system, as the CNI plugin does
  writeFileSync(kubeconfig, server.kubeconfig());
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  store = createKubernetesStore({ kubeconfig: kubeConfig });
  core = kubeConfig.makeApiClient(CoreV1Api);
});
afterEach(async () => {
  await store.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The seed: ns/sts-0 reborn with a new UID and IP; its dead sandbox's reservation is still held. */
async function seed(): Promise<void> {
  const created = await core.createNamespacedPod({
    namespace: "ns",
    body: {
      metadata: {
        name: "sts-0",
        annotations: { "k8s.v1.cni.cncf.io/network-status": JSON.stringify([{ interface: "net1", ips: ["10.9.0.2"] }]) },
      },
      spec: { containers: [{ name: "app", image: "registry.example/app:1" }] },
    },
  });
  await core.replaceNamespacedPodStatus({ namespace: "ns", name: "sts-0", body: { ...created, status: { phase: "Running" } } });
  const ipam = createIpam({ store, now: anHourAgo });
  await ipam.allocate({ ranges: [range], key: key("dead"), podRef: "ns/sts-0", podUid: "old-uid" });
  await ipam.allocate({ ranges: [range], key: key("live"), podRef: "ns/sts-0", podUid: created.metadata?.uid ?? "" });
}

const held = async () => ((await store.readPool(pool))?.pool.reservations() ?? []).map((r) => r.key.containerId);

describe("--once", () => {
  it("releases the stale reservation of the reborn pod, logs why, and exits 0", async () => {
    await seed();
    const run = await runMain(["--kubeconfig", kubeconfig, "--once"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(await held()).toEqual(["live"]);
    const released = run.lines.filter((l) => l.msg === "released");
    expect(released).toEqual([
      expect.objectContaining({ address: "10.9.0.1", reason: "pod-uid-changed", podRef: "ns/sts-0", containerId: "dead" }),
    ]);
    expect(run.lines.at(-1)).toMatchObject({ msg: "reconcile finished", released: 1, failed: 0 });
  });

  it("--dry-run prints what it would release and changes nothing", async () => {
    await seed();
    const run = await runMain(["--kubeconfig", kubeconfig, "--once", "--dry-run"]);
    expect(run.code).toBe(0);
    expect(await held()).toEqual(["dead", "live"]);
    expect(run.lines.filter((l) => l.msg === "would release (dry run)")).toEqual([
      expect.objectContaining({ address: "10.9.0.1", reason: "pod-uid-changed" }),
    ]);
  });

  it("overlapping-range records no entry backs: --dry-run reports them with reasons, a pass deletes them conditionally", async () => {
    await seed();
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const orips = {
      group: "whereabouts.cni.cncf.io",
      version: "v1alpha1",
      namespace: "kube-system",
      plural: "overlappingrangeipreservations",
    };
    // left by Whereabouts (podref and ifname only, the address in the name) and by an ipamkit ADD that lost its race
    await custom.createNamespacedCustomObject({
      ...orips,
      body: {
        apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
        kind: "OverlappingRangeIPReservation",
        metadata: { name: "10.9.0.7" },
        spec: { podref: "ns/old", ifname: "net1" },
      },
    });
    await store.writeClaim({ network: "", address: "10.9.0.8" }, { pool, key: key("lost"), podRef: "ns/lost" }, undefined);
    const names = async () =>
      ((await custom.listNamespacedCustomObject(orips)) as { items: { metadata: { name: string } }[] }).items
        .map((o) => o.metadata.name)
        .sort();
    const dry = await runMain(["--kubeconfig", kubeconfig, "--once", "--dry-run", "--claim-settle", "0"]);
    expect(dry.code).toBe(0);
    expect(dry.lines.filter((l) => l.msg === "would repair claim (dry run)")).toEqual([
      expect.objectContaining({
        address: "10.9.0.7",
        kind: "claim-without-entry",
        detail: expect.stringContaining("no pool holds 10.9.0.7"),
      }),
      expect.objectContaining({ address: "10.9.0.8", kind: "claim-without-entry", claimKey: "lost" }),
    ]);
    expect(dry.lines.at(-1)).toMatchObject({
      msg: "dry run finished",
      claims: { repaired: { "claim-without-entry": 2 }, skipped: [], young: 0 },
    });
    expect(await names()).toEqual(["10.9.0.1", "10.9.0.2", "10.9.0.7", "10.9.0.8"]);
    const run = await runMain(["--kubeconfig", kubeconfig, "--once", "--claim-settle", "0"]);
    expect(run.code).toBe(0);
    expect(run.lines.filter((l) => l.msg === "claim repaired").map((l) => l.address)).toEqual(["10.9.0.7", "10.9.0.8"]);
    // the stale reservation's record went with it; the live one's stays
    expect(await names()).toEqual(["10.9.0.2"]);
  });

  it("--grace keeps young reservations", async () => {
    await createIpam({ store }).allocate({ ranges: [range], key: key("young"), podRef: "ns/gone" });
    const run = await runMain(["--kubeconfig", kubeconfig, "--once", "--grace", "1h"]);
    expect(run.code).toBe(0);
    expect(await held()).toEqual(["young"]);
    expect(run.lines.at(-1)).toMatchObject({ kept: { "within-grace": 1 } });
  });

  it("the file store holds the pools, pods still come from the kubeconfig", async () => {
    const { createFileStore } = await import("@ipamkit/storage-file");
    const dataDir = join(dir, "data");
    const files = createFileStore({ dir: dataDir });
    await createIpam({ store: files, now: anHourAgo }).allocate({ ranges: [range], key: key("gone"), podRef: "ns/gone" });
    const run = await runMain(["--kubeconfig", kubeconfig, "--once", "--datastore", "file", "--data-dir", dataDir]);
    expect(run.code).toBe(0);
    expect((await files.readPool(pool))?.pool.size).toBe(0);
    await files.close();
  });

  it("an unreachable API server: exit 1 with a one-line reason, nothing released", async () => {
    await seed();
    const closed = join(dir, "closed");
    writeFileSync(closed, server.kubeconfig().replace(/127\.0\.0\.1:\d+/, "127.0.0.1:9"));
    const run = await runMain(["--kubeconfig", closed, "--once"]);
    expect(run.code).toBe(1);
    const last = run.lines.at(-1);
    expect(last).toMatchObject({ level: 50, code: "STORE_UNAVAILABLE" });
    expect(String(last?.msg)).toMatch(/^reconciler failed: .*unavailable/);
    expect(run.stdout).not.toMatch(/\n\s+at /);
    expect(await held()).toEqual(["dead", "live"]);
  });
});

describe("usage", () => {
  for (const [args, message] of [
    [["--frobnicate"], /Unknown option '--frobnicate'/],
    [["--schedule", "61 * * * *"], /--schedule: "61 \* \* \* \*" is not a cron expression/],
    [["--grace", "soon"], /--grace: "soon" is not a duration/],
    [["--once", "--watch"], /exclude each other/],
    [["--datastore", "mysql"], /--datastore: expected kubernetes, etcd or file/],
    [["--datastore", "etcd"], /needs --etcd-endpoints/],
    [["--data-dir", "/x"], /only used with --datastore file/],
    [["--leader-election", "maybe"], /expected true or false/],
    [["--log-level", "loud"], /unknown level/],
  ] as const) {
    it(`${args.join(" ")} → exit 2 and a clear message`, async () => {
      const run = await runMain([...args]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).toContain("usage:");
    });
  }

  it("--help prints the usage and exits 0", async () => {
    const run = await runMain(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("--schedule CRON");
  });
});

describe("long-running", () => {
  it("on a schedule, leader-elected: a Lease held by another instance keeps it passive until released", async () => {
    await seed();
    const leases = kubeConfig.makeApiClient(CustomObjectsApi);
    const lease = { group: "coordination.k8s.io", version: "v1", namespace: "kube-system", plural: "leases" };
    const micro = () => new Date().toISOString().replace("Z", "000Z");
    const holder = () => ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "ipamkit-reconciler" },
      spec: { holderIdentity: "someone-else", leaseDurationSeconds: 2, acquireTime: micro(), renewTime: micro() },
    });
    await leases.createNamespacedCustomObject({ ...lease, body: holder() });
    const renewing = setInterval(async () => {
      const current = (await leases.getNamespacedCustomObject({ ...lease, name: "ipamkit-reconciler" })) as ReturnType<typeof holder>;
      await leases.replaceNamespacedCustomObject({
        ...lease,
        name: "ipamkit-reconciler",
        body: { ...current, spec: { ...current.spec, renewTime: micro() } },
      });
    }, 300);
    const app = startMain(["--kubeconfig", kubeconfig, "--schedule", "* * * * * *", "--identity", "me"]);
    try {
      await new Promise((r) => setTimeout(r, 4_000));
      expect(await held()).toEqual(["dead", "live"]);
      clearInterval(renewing);
      const deadline = Date.now() + 15_000;
      while ((await held()).length > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await held()).toEqual(["live"]);
    } finally {
      clearInterval(renewing);
      expect(await app.stop()).toBe(0);
    }
    expect(app.lines().some((l) => l.msg === "ipamkit reconciler stopped")).toBe(true);
  }, 60_000);

  it("--watch: a pod deleted while it runs loses its IP", async () => {
    const created = await core.createNamespacedPod({
      namespace: "ns",
      body: { metadata: { name: "web" }, spec: { containers: [{ name: "a", image: "i" }] } },
    });
    await createIpam({ store, now: anHourAgo }).allocate({
      ranges: [range],
      key: key("web"),
      podRef: "ns/web",
      podUid: created.metadata?.uid ?? "",
    });
    const app = startMain(["--kubeconfig", kubeconfig, "--watch", "--leader-election", "false"]);
    try {
      const deadline = Date.now() + 15_000;
      while (!app.lines().some((l) => l.msg === "reconcile finished") && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(await held()).toEqual(["web"]);
      await core.deleteNamespacedPod({ namespace: "ns", name: "web", gracePeriodSeconds: 0 });
      while ((await held()).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await held()).toEqual([]);
    } finally {
      expect(await app.stop()).toBe(0);
    }
  }, 30_000);
});
