import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findWhereabouts, type KubeApiserver, startKubeApiserver, whereaboutsCrdFiles } from "@ipamkit/kube-apiserver-launcher";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lines, runBin } from "./test-support.js";

// `ipamkit preflight` on a real kube-apiserver with Whereabouts' CRDs and Multus' NAD CRD: one NAD
// per config of the Whereabouts corpus (examples/cni-plugin/test/whereabouts-corpus.json), and
// pools, ORIPs, a NodeSlicePool and its slice pool as Whereabouts writes them.

interface CorpusEntry {
  id: string;
  conf: Record<string, unknown>;
  flat?: unknown;
  ipamkit: "accept" | "refuse";
}
// the entries that come with a flat file of their own are left out: a cluster has one flat file (--flat-file)
const corpus = (
  JSON.parse(
    readFileSync(join(import.meta.dirname, "..", "..", "..", "examples", "cni-plugin", "test", "whereabouts-corpus.json"), "utf8"),
  ) as CorpusEntry[]
).filter((entry) => entry.flat === undefined);
const NAD_CRD = join(import.meta.dirname, "..", "test", "nad-crd.yaml");
const NS = "whereabouts";
const W = { group: "whereabouts.cni.cncf.io", version: "v1alpha1" };

let api: KubeApiserver;
let dir: string;
let custom: CustomObjectsApi;
let flatFile: string;
const nadName = (i: number) => `corpus-${i}`;

beforeAll(async () => {
  api = await startKubeApiserver({
    crds: [...whereaboutsCrdFiles(findWhereabouts()), NAD_CRD],
    namespaces: [NS, "tenant-a", "tenant-b"],
    namespace: NS,
  });
  custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
  dir = mkdtempSync(join(tmpdir(), "ipamkit-preflight-"));
  flatFile = join(dir, "whereabouts.conf");
  writeFileSync(
    flatFile,
    JSON.stringify({ datastore: "kubernetes", kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" } }),
  );
}, 180_000);
afterAll(async () => {
  await api?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const createNad = (namespace: string, name: string, config: unknown) =>
  custom.createNamespacedCustomObject({
    group: "k8s.cni.cncf.io",
    version: "v1",
    namespace,
    plural: "network-attachment-definitions",
    body: {
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { name },
      spec: { config: JSON.stringify(config) },
    },
  });
const deleteNad = (namespace: string, name: string) =>
  custom.deleteNamespacedCustomObject({
    group: "k8s.cni.cncf.io",
    version: "v1",
    namespace,
    plural: "network-attachment-definitions",
    name,
  });
const create = (plural: string, body: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({ ...W, namespace: NS, plural, body: { apiVersion: `${W.group}/${W.version}`, ...body } });
const preflight = (...extra: string[]) =>
  runBin(["preflight", "--kubeconfig", api.kubeconfigPath, "--flat-file", flatFile, "--settle", "0s", ...extra]);

describe("ipamkit preflight", () => {
  it("needs a cluster: one line, exit 2", async () => {
    const r = await runBin(["preflight"]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual([expect.stringContaining("--kubeconfig")]);
  });

  it("exit 0 on a cluster whose NADs and pools ipamkit takes as they are; a conflist and other plugins' NADs included", async () => {
    await createNad("tenant-a", "plain", {
      cniVersion: "0.3.1",
      name: "plain",
      type: "macvlan",
      ipam: { type: "whereabouts", range: "10.70.1.0/24" },
    });
    await createNad("tenant-a", "host-local", {
      cniVersion: "0.3.1",
      name: "h",
      type: "bridge",
      ipam: { type: "host-local", subnet: "10.9.0.0/24" },
    });
    await createNad("tenant-b", "chained", {
      cniVersion: "0.4.0",
      name: "chain",
      plugins: [{ type: "macvlan", ipam: { type: "whereabouts", range: "10.70.0.0/24", subnet: "x" } }, { type: "tuning" }],
    });
    await create("ippools", { kind: "IPPool", metadata: { name: "10.70.0.0-24" }, spec: { range: "10.70.0.0/24", allocations: {} } });
    const r = await preflight();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("ok       tenant-a/plain: accepted as is");
    expect(r.stdout).toContain("warnings tenant-b/chained plugins[0]: accepted with warnings:");
    expect(r.stdout).toContain("ipam.subnet");
    expect(r.stdout).not.toContain("host-local");
    expect(r.stdout).toContain("The swap is safe");
    for (const [ns, name] of [
      ["tenant-a", "plain"],
      ["tenant-a", "host-local"],
      ["tenant-b", "chained"],
    ] as const)
      await deleteNad(ns, name);
  });

  it("classifies every NAD of the corpus as the plugin's loader does, names refusals with their fix, reports pool repairs and refusals; exit 1", async () => {
    for (const [i, entry] of corpus.entries()) await createNad("tenant-a", nadName(i), entry.conf);
    // Whereabouts' objects: a pre-v0.8 entry (no ifname), a dangling ORIP, a pool ipamkit cannot read, a NodeSlicePool
    await create("ippools", {
      kind: "IPPool",
      metadata: { name: "10.71.0.0-24" },
      spec: { range: "10.71.0.0/24", allocations: { "1": { id: "legacy-ctr", podref: "default/old" } } },
    });
    await create("overlappingrangeipreservations", {
      kind: "OverlappingRangeIPReservation",
      metadata: { name: "10.71.0.9" },
      spec: { podref: "default/gone" },
    });
    await create("ippools", {
      kind: "IPPool",
      metadata: { name: "10.72.0.0-24" },
      spec: { range: "10.72.0.0/24", allocations: { x: { id: "c", podref: "default/p" } } },
    });
    // node slices as Whereabouts v0.8+ writes them: the NodeSlicePool (one of its two slices assigned),
    // the node's per-slice IPPool `<network>-<node>-<slice>` with an entry, and that entry's ORIP,
    // named after the network — read as network slicednet's, nothing to repair
    await create("nodeslicepools", {
      kind: "NodeSlicePool",
      metadata: { name: "slicednet" },
      spec: { range: "10.73.0.0/23", sliceSize: "/24" },
      status: {
        allocations: [
          { nodeName: "node-a", sliceRange: "10.73.0.0/24" },
          { nodeName: "", sliceRange: "10.73.1.0/24" },
        ],
      },
    });
    await create("ippools", {
      kind: "IPPool",
      metadata: { name: "slicednet-node-a-10.73.0.0-24" },
      spec: { range: "10.73.0.0/24", allocations: { "1": { id: "sliced-ctr", podref: "default/sliced", ifname: "net1" } } },
    });
    await create("overlappingrangeipreservations", {
      kind: "OverlappingRangeIPReservation",
      metadata: { name: "slicednet-10.73.0.1" },
      spec: { podref: "default/sliced", ifname: "net1", containerid: "sliced-ctr" },
    });
    const r = await preflight("--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as {
      nads: { nad: string; verdict: string; lines: string[] }[];
      poolFindings: { kind: string; verdict: string; fix: string }[];
      nodeSlicePools: { name: string }[];
      safe: boolean;
    };
    expect(report.safe).toBe(false);
    const verdictOf = (i: number) => report.nads.filter((n) => n.nad === `tenant-a/${nadName(i)}`).map((n) => n.verdict);
    const mismatches = corpus.flatMap((entry, i) => {
      const want = entry.ipamkit === "refuse" ? "refused" : ["accepted", "warnings"];
      const got = verdictOf(i);
      return got.length === 1 && (typeof want === "string" ? got[0] === want : want.includes(got[0] as string))
        ? []
        : [`${entry.id}: ${got.join(",")}`];
    });
    expect(mismatches).toEqual([]);
    for (const n of report.nads.filter((x) => x.verdict === "refused")) {
      expect(n.lines).toHaveLength(1);
      expect(n.lines[0]).toMatch(/^(ipam\.|cniVersion)/);
    }
    expect(report.poolFindings.map((f) => `${f.kind} ${f.verdict}`).sort()).toEqual([
      "claim-without-entry repair",
      "entry-without-claim repair",
      "legacy-entry repair",
      "unreadable-pool refuse",
    ]);
    expect(report.nodeSlicePools).toEqual([{ name: "slicednet", range: "10.73.0.0/23", sliceSize: "/24", slices: 2, assigned: 1 }]);
    const text = await preflight();
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      /REFUSED {2}tenant-a\/corpus-\d+: refused:\n\s+- ipam\.range "10\.60\.18\.0\/31": \/31 has no usable address .*use a \/30 or wider/,
    );
    expect(text.stdout).toContain("slices   slicednet: 10.73.0.0/23 in /24 slices, 1 of 2 assigned to nodes");
    expect(text.stdout).toContain("The swap is NOT safe");
  });
});
