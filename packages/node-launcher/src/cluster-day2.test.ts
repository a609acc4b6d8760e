import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Cluster, startCluster } from "./cluster.js";
import { checkCluster } from "./cluster-checks.js";
import { scaleAndWait } from "./cluster-pods.js";
import { expectConsistent as expectCluster } from "./cluster-test-kit.js";
import { snapshotHost } from "./host-state.js";
import { NETWORKS_ANNOTATION } from "./multus.js";
import { pauseImage } from "./pause.js";
import { until } from "./processes.js";
import { installWhereaboutsControlLoop } from "./whereabouts-cluster.js";

// Day 2 on a real cluster (two nodes, Multus, the NADs written for Whereabouts, ipamkit by its
// chart): an agent outage and `helm uninstall` never strand a pod. While no agent answers, the
// binary journals each DEL (the chart's agent.journalDir) and answers success, so the kubelet
// removes deleted pods; an ADD answers code 11 with one line saying why. The agent replays the
// journal by exact key when it is back. Asserted through the API (pods, events, IPPools, ORIPs)
// and the nodes' own files.
let cluster: Cluster;
const JOURNAL = "/var/lib/ipamkit/journal";
const NOT_INSTALLED = "ipamkit's agent is not installed on this node";

beforeAll(async () => {
  cluster = await startCluster({ image: inject("ipamkitImage"), namespace: "day2" });
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
}, 300_000);

const names = () => cluster.nodes.map((n) => n.name);
const journalRecords = () => cluster.nodes.flatMap((n) => readdirIfAny(n.hostPath(JOURNAL)).map((f) => `${n.name}:${f}`));
const readdirIfAny = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => !f.startsWith(".")) : []);
const podsOf = async (set: string) =>
  (await checkCluster(cluster)).allocations.filter((a) => a.podref.startsWith(`${cluster.namespace}/${set}-`));
/** The addresses of a StatefulSet's pods (`set-0`, `set-1`…), or of the one pod `pod`. */
const addressesOf = async (set: string, pod?: string) =>
  (await checkCluster(cluster)).podAddresses
    .filter((a) => (pod === undefined ? a.pod.startsWith(`${cluster.namespace}/${set}-`) : a.pod === `${cluster.namespace}/${pod}`))
    .map((a) => `${a.pod} ${a.interface} ${a.address}`)
    .sort();

const expectConsistent = () => expectCluster(cluster);

/** Scales to 0 and returns how long until every pod of the set was gone from the API (throws past `limitMs`). */
async function deleteAllWithin(set: string, limitMs: number): Promise<number> {
  const t0 = performance.now();
  await scaleAndWait(cluster, set, 0, limitMs);
  return performance.now() - t0;
}

/** The warning events of `pod` (the kubelet's FailedCreatePodSandBox carries the CNI error). */
async function warnings(pod: V1Pod): Promise<string[]> {
  const events = (await cluster.core.listNamespacedEvent({ namespace: cluster.namespace })).items;
  return events.filter((e) => e.type === "Warning" && e.involvedObject.uid === pod.metadata?.uid).map((e) => e.message ?? "");
}

describe("day 2 on a real cluster: an agent outage and helm uninstall never strand a pod", () => {
  it("agent DaemonSet deleted: 10 pods deleted are gone within 60 s (their DELs journaled); the agent back replays the journal, freeing every one and nothing live", async () => {
    await scaleAndWait(cluster, "keep", 2);
    await scaleAndWait(cluster, "web", 10, 300_000);
    const live = await addressesOf("keep");
    expect(live).toHaveLength(4);
    expect(await podsOf("web")).toHaveLength(20);

    await cluster.ipam.deleteAgents();
    const goneMs = await deleteAllWithin("web", 60_000);
    expect(goneMs).toBeLessThan(60_000);
    // the DELs were journaled on the nodes, not applied: the entries are still there
    expect(journalRecords().length).toBeGreaterThan(0);
    expect(await podsOf("web")).toHaveLength(20);

    // the agent back (helm upgrade re-creates the DaemonSet): it replays the journal by exact key
    await cluster.ipam.upgrade({});
    await cluster.ipam.ready(names());
    await until("every journaled DEL replayed", 120_000, async () => (await podsOf("web")).length === 0 && journalRecords().length === 0);
    await expectConsistent();
    expect(await addressesOf("keep")).toEqual(live);
  }, 900_000);

  it("helm uninstall: deleting pods still succeeds, an ADD fails with one line saying the agent is not installed; installed again, the journal is replayed and the pod starts", async () => {
    await scaleAndWait(cluster, "web", 2);
    const live = await addressesOf("keep");
    await cluster.ipam.uninstall();
    // the binary and the flat file stay on the hosts (cni.uninstall is off by default)
    for (const node of cluster.nodes) expect(existsSync(node.hostPath("/opt/cni/bin/whereabouts"))).toBe(true);
    await deleteAllWithin("web", 60_000);
    expect(journalRecords().length).toBeGreaterThan(0);

    await cluster.core.createNamespacedPod({
      namespace: cluster.namespace,
      body: {
        metadata: { name: "late", labels: { app: "late" }, annotations: { [NETWORKS_ANNOTATION]: cluster.networks.names.join(",") } },
        spec: {
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          containers: [{ name: "app", image: pauseImage().ref, imagePullPolicy: "Never" }],
        },
      },
    });
    let said: string[] = [];
    await until("the late pod's ADD refused", 120_000, async () => {
      const pod = await cluster.core.readNamespacedPod({ name: "late", namespace: cluster.namespace });
      said = await warnings(pod);
      return said.some((m) => m.includes(NOT_INSTALLED));
    });
    const line = said.find((m) => m.includes(NOT_INSTALLED)) ?? "";
    // ipamkit's part of the runtime's message is one line
    expect(line.slice(line.indexOf("ipamkit agent at")).split("\n")[0]).toContain(NOT_INSTALLED);

    await cluster.ipam.install(names());
    await until("the late pod Running with its networks", 180_000, async () => {
      const pod = await cluster.core.readNamespacedPod({ name: "late", namespace: cluster.namespace });
      return pod.status?.phase === "Running" && (await addressesOf("", "late")).length === cluster.networks.names.length;
    });
    await until("the journal replayed", 120_000, async () => (await podsOf("web")).length === 0 && journalRecords().length === 0);
    await expectConsistent();
    expect(await addressesOf("keep")).toEqual(live);
    await cluster.core.deleteNamespacedPod({ name: "late", namespace: cluster.namespace });
    await until(
      "the late pod gone",
      60_000,
      async () => (await cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: "app=late" })).items.length === 0,
    );
  }, 900_000);

  it("going back to Whereabouts as the migration guide says: helm uninstall, then Whereabouts' own manifest and binary; its binary serves new pods beside the live ones and frees the entries of ipamkit's pods when they are deleted", async () => {
    await scaleAndWait(cluster, "keep", 2);
    const live = await addressesOf("keep");
    await cluster.ipam.uninstall();
    // `kubectl apply` of Whereabouts' manifest; its installer's work on every node: the binary under
    // /opt/cni/bin/whereabouts and its flat file with a kubeconfig
    const whereabouts = await installWhereaboutsControlLoop(cluster.apiserver);
    for (const node of cluster.nodes) {
      for (const image of whereabouts.images) node.importImage(image);
      for (const [name, from] of Object.entries(whereabouts.cniBinaries)) {
        copyFileSync(from, node.hostPath(`/opt/cni/bin/${name}`));
        chmodSync(node.hostPath(`/opt/cni/bin/${name}`), 0o755);
      }
      for (const [path, content] of Object.entries(whereabouts.cniFiles)) {
        const file = node.hostPath(`/etc/cni/net.d/${path}`);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, content, { mode: 0o600 });
      }
    }
    await whereabouts.ready(names());
    // ipamkit's pools are Whereabouts': new pods get addresses beside the live ones, none twice
    await scaleAndWait(cluster, "web", 4, 300_000);
    await expectConsistent();
    expect(await addressesOf("keep")).toEqual(live);
    // pods ipamkit served are deleted by Whereabouts' binary, which frees their entries; nothing left
    await scaleAndWait(cluster, "keep", 0);
    await scaleAndWait(cluster, "web", 0);
    await until("every entry and reservation freed", 60_000, async () => {
      const r = await checkCluster(cluster);
      return r.allocations.length === 0 && r.reservations.length === 0;
    });
    // ipamkit installed again over it (the third test needs it): its installer takes the names back
    await cluster.ipam.install(names());
  }, 900_000);

  it("with cni.uninstall, helm uninstall removes ipamkit's binaries and flat file from every host, and nothing of Multus'", async () => {
    await scaleAndWait(cluster, "keep", 0);
    await until("nothing held", 60_000, async () => (await checkCluster(cluster)).allocations.length === 0);
    await cluster.ipam.upgrade({ cni: { uninstall: true } });
    await cluster.ipam.uninstall();
    for (const node of cluster.nodes) {
      for (const path of ["/opt/cni/bin/ipamkit", "/opt/cni/bin/whereabouts", "/etc/cni/net.d/whereabouts.d/whereabouts.conf"])
        await until(`${node.name}: ${path} removed`, 60_000, async () => !existsSync(node.hostPath(path)));
      // Multus' own files are not ipamkit's
      expect(existsSync(node.hostPath("/etc/cni/net.d/00-multus.conf"))).toBe(true);
    }
  }, 600_000);

  it("stop() restores the host", async () => {
    await cluster.stop();
    expect(snapshotHost({ links: cluster.links })).toEqual(cluster.before);
  }, 300_000);
});
