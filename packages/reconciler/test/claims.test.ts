import { attachmentKey, createIpam, parseRange } from "@ipamkit/core";
import { ipPoolName } from "@ipamkit/storage-kubernetes";
import { describe, expect, it } from "vitest";
import { reconcileOnce } from "../src/reconcile.js";
import { anHourAgo, type Cluster, clusterTargets, freshClusterEach, POOL_NS, range } from "./cluster.js";

/**
 * The claim audit (claim-audit.ts) on the Kubernetes store: OverlappingRangeIPReservations that no
 * IPPool entry backs, entries without theirs, and records naming another container than the entry
 * — ipamkit's own and Whereabouts-written ones (no ipamkit annotations) — reported in a dry run,
 * repaired conditionally in a pass. On the strict test API server and on a real kube-apiserver.
 */

const key = (containerId: string) => attachmentKey({ containerId, ifName: "net1" });
const pool = { network: "", cidr: range.cidr.text };
const GROUP = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: POOL_NS };
const ORIPS = { ...GROUP, plural: "overlappingrangeipreservations" };
const at = (n: number) => ({ network: "", address: `10.1.0.${n}` });

let cluster: Cluster;

interface Orip {
  metadata: { name: string; annotations?: Record<string, string>; resourceVersion: string };
  spec: { podref?: string; containerid?: string; ifname?: string };
}

/** Every ORIP by name: `podref containerid` (containerid empty for Whereabouts-written ones). */
async function orips(): Promise<Record<string, string>> {
  const list = (await cluster.custom.listNamespacedCustomObject(ORIPS)) as { items: Orip[] };
  return Object.fromEntries(list.items.map((o) => [o.metadata.name, `${o.spec.podref ?? ""} ${o.spec.containerid ?? ""}`]));
}

/** An ORIP as Whereabouts writes it: podref and ifname only, the address only in the name. */
async function whereaboutsOrip(address: string, podref: string): Promise<void> {
  await cluster.custom.createNamespacedCustomObject({
    ...ORIPS,
    body: {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "OverlappingRangeIPReservation",
      metadata: { name: address },
      spec: { podref, ifname: "net1" },
    },
  });
}

/** Adds an allocation to the IPPool as Whereabouts writes one (no pod UID, no creation time). */
async function whereaboutsEntry(offset: number, id: string, podref: string): Promise<void> {
  const name = ipPoolName(pool);
  const object = (await cluster.custom.getNamespacedCustomObject({ ...GROUP, plural: "ippools", name })) as {
    spec: { allocations: Record<string, unknown> };
  };
  object.spec.allocations[String(offset)] = { id, podref, ifname: "net1" };
  await cluster.custom.replaceNamespacedCustomObject({ ...GROUP, plural: "ippools", name, body: object });
}

/**
 * 10.1.0.1 consistent; .2 an entry whose record names another container; .3 an ipamkit record
 * without entry; .4 a Whereabouts entry without record; .5 an ipamkit entry without record (made
 * with overlapping ranges off); .6 the same, but young; .9 a Whereabouts record without entry.
 */
async function seedInconsistencies(): Promise<void> {
  for (const [name, n] of [
    ["a", 1],
    ["b", 2],
    ["w", 4],
    ["m", 5],
    ["y", 6],
  ] as const) {
    await cluster.createPod({ name, net1: [`10.1.0.${n}`] });
  }
  const allocate = (ipam: ReturnType<typeof createIpam>, id: string, n: number) =>
    ipam.allocate({ ranges: [range], key: key(`sandbox-${id}`), addresses: [`10.1.0.${n}`], podRef: `ns/${id}` });
  await allocate(cluster.oldIpam, "a", 1);
  await allocate(cluster.oldIpam, "b", 2);
  const b = await cluster.store.readClaim(at(2));
  await cluster.store.writeClaim(at(2), { pool, key: key("sandbox-ghost"), podRef: "ns/ghost" }, b?.version);
  await cluster.store.writeClaim(at(3), { pool, key: key("sandbox-gone"), podRef: "ns/gone" }, undefined);
  await whereaboutsEntry(4, "sandbox-w", "ns/w");
  await allocate(createIpam({ store: cluster.store, overlappingRanges: false, now: anHourAgo }), "m", 5);
  await allocate(createIpam({ store: cluster.store, overlappingRanges: false }), "y", 6);
  await whereaboutsOrip("10.1.0.9", "ns/old");
}

for (const target of clusterTargets()) {
  describe(`claim audit on ${target.name}`, () => {
    freshClusterEach(target, (c) => {
      cluster = c;
    });

    it("a dry run reports every record without entry, entry without record and record naming another container, with reasons, and changes nothing", async () => {
      await seedInconsistencies();
      const before = await orips();
      const lines: Record<string, unknown>[] = [];
      const { default: pino } = await import("pino");
      const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
      const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods, dryRun: true, logger, claimSettleMs: 0 });
      expect(report.released).toEqual([]);
      expect(report.failed).toEqual([]);
      expect(report.claims?.repaired.map((f) => [f.ref.address, f.kind])).toEqual([
        ["10.1.0.2", "claim-names-other-entry"],
        ["10.1.0.3", "claim-without-entry"],
        ["10.1.0.4", "entry-without-claim"],
        ["10.1.0.5", "entry-without-claim"],
        ["10.1.0.9", "claim-without-entry"],
      ]);
      expect(report.claims?.young).toBe(1);
      expect(await orips()).toEqual(before);
      const logged = lines.filter((l) => l.msg === "would repair claim (dry run)");
      expect(logged.map((l) => [l.address, l.kind])).toEqual(report.claims?.repaired.map((f) => [f.ref.address, f.kind]));
      expect(logged[0]).toMatchObject({ claimKey: "sandbox-ghost", containerId: "sandbox-b", podRef: "ns/b" });
      expect(String(logged[4]?.detail)).toContain("no pool holds 10.1.0.9");
    });

    it("a pass repairs them: leftovers deleted, records rewritten to name their entry, missing ones created; the next pass finds nothing", async () => {
      await seedInconsistencies();
      const report = await reconcileOnce({ store: cluster.store, pods: cluster.pods, claimSettleMs: 0 });
      expect(report.failed).toEqual([]);
      expect(report.released).toEqual([]);
      expect(report.claims?.repaired.map((f) => f.ref.address)).toEqual(["10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.9"]);
      expect(await orips()).toEqual({
        "10.1.0.1": "ns/a sandbox-a",
        "10.1.0.2": "ns/b sandbox-b",
        "10.1.0.4": "ns/w sandbox-w",
        "10.1.0.5": "ns/m sandbox-m",
      });
      const again = await reconcileOnce({ store: cluster.store, pods: cluster.pods, claimSettleMs: 0 });
      expect(again.claims).toEqual({ repaired: [], skipped: [], young: 1 });
      // the young entry's record is created once it is past the grace period
      const later = await reconcileOnce({ store: cluster.store, pods: cluster.pods, claimSettleMs: 0, graceMs: 0 });
      expect(later.claims?.repaired.map((f) => [f.ref.address, f.kind])).toEqual([["10.1.0.6", "entry-without-claim"]]);
      expect((await orips())["10.1.0.6"]).toBe("ns/y sandbox-y");
    });

    it("what changes while the findings settle is left alone: a late Whereabouts record, an ADD taking a leftover over", async () => {
      await cluster.createPod({ name: "a", net1: ["10.1.0.1"] });
      await cluster.createPod({ name: "w", net1: ["10.1.0.4"] });
      await cluster.createPod({ name: "c", net1: ["10.1.0.3"] });
      await cluster.oldIpam.allocate({ ranges: [range], key: key("sandbox-a"), podRef: "ns/a", addresses: ["10.1.0.1"] });
      await cluster.store.writeClaim(at(3), { pool, key: key("sandbox-gone"), podRef: "ns/gone" }, undefined);
      await whereaboutsEntry(4, "sandbox-w", "ns/w");
      const report = await reconcileOnce({
        store: cluster.store,
        pods: cluster.pods,
        claimSettleMs: 1_000,
        // while the pass waits: Whereabouts' ADD writes its record at last, an ipamkit ADD takes .3
        sleep: async () => {
          await whereaboutsOrip("10.1.0.4", "ns/w");
          const ipam = createIpam({ store: cluster.store });
          await ipam.allocate({
            ranges: [parseRange({ range: "10.1.0.0/24", range_start: "10.1.0.3" })],
            key: key("sandbox-c"),
            podRef: "ns/c",
          });
        },
      });
      expect(report.failed).toEqual([]);
      expect(report.claims?.repaired).toEqual([]);
      expect(report.claims?.skipped.map((s) => [s.finding.ref.address, s.why])).toEqual([
        ["10.1.0.3", "changed"],
        ["10.1.0.4", "changed"],
      ]);
      expect(await orips()).toEqual({ "10.1.0.1": "ns/a sandbox-a", "10.1.0.3": "ns/c sandbox-c", "10.1.0.4": "ns/w " });
    });
  });
}
