import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WHEREABOUTS_DIFFERENCES } from "@ipamkit/cni";
import { findWhereabouts, type KubeApiserver, startKubeApiserver, whereaboutsCrdFiles } from "@ipamkit/kube-apiserver-launcher";
import { planNodeSlices } from "@ipamkit/storage-kubernetes";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cniEnv, PLUGIN, runPlugin } from "../test/run-plugin.js";
import { type CorpusEntry, type Outcome, outcomeOf, placed, readCorpus, sameOutcome } from "../test/whereabouts-corpus.js";

// Every config of the corpus (Whereabouts' own documented and tested configs and the variants
// users write) through Whereabouts' real binary (v0.9.2, test-infra/whereabouts) and ipamkit's,
// each on an empty pool of its own (a namespace per entry and binary) on a real kube-apiserver
// with Whereabouts' CRDs. The two must answer alike — the same addresses and gateways, or both an
// error — except where the entry names a deliberate difference listed in docs/configuration.md.
// An entry with node_slice_size runs on node NODE, whose slice its NodeSlicePool gives as
// Whereabouts' node-slice controller assigns it on a cluster of that one node (none when the
// controller cannot slice the range).

const corpus = readCorpus();
const known = new Set(WHEREABOUTS_DIFFERENCES.map((d) => d.id));
const namespaceOf = (index: number, binary: "wb" | "ik") => `corpus-${index}-${binary}`;
const NODE = "corpus-node";

let api: KubeApiserver;
let dir: string;
let whereaboutsBinary: string;
beforeAll(async () => {
  const whereabouts = findWhereabouts();
  whereaboutsBinary = whereabouts.binary;
  const namespaces = corpus.flatMap((_, i) => [namespaceOf(i, "wb"), namespaceOf(i, "ik")]);
  api = await startKubeApiserver({ crds: whereaboutsCrdFiles(whereabouts), namespaces, namespace: "default", timeoutMs: 180_000 });
  dir = mkdtempSync(join(tmpdir(), "ipamkit-corpus-"));
}, 240_000);
afterAll(async () => {
  await api?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig whose context namespace is `namespace` (the pools' namespace for both binaries). */
function kubeconfigFor(namespace: string, path: string): void {
  const config = new KubeConfig();
  config.loadFromString(api.kubeConfig.exportConfig());
  const exported = JSON.parse(config.exportConfig()) as { contexts: { context: { namespace?: string } }[] };
  for (const context of exported.contexts) context.context.namespace = namespace;
  writeFileSync(path, JSON.stringify(exported), { mode: 0o600 });
}

async function run(entry: CorpusEntry, index: number, binary: "wb" | "ik"): Promise<Outcome> {
  const home = join(dir, `${index}-${binary}`);
  mkdirSync(home, { recursive: true });
  const paths = { kubeconfig: join(home, "kubeconfig"), flatFile: join(home, "whereabouts.conf") };
  kubeconfigFor(namespaceOf(index, binary), paths.kubeconfig);
  const { conf, flat } = placed(entry, paths);
  writeFileSync(paths.flatFile, JSON.stringify(flat));
  const sliced = await nodeSlicePool(entry, namespaceOf(index, binary));
  const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=corpus-${index};K8S_POD_INFRA_CONTAINER_ID=c${index};K8S_POD_UID=uid-${index}`;
  // Whereabouts follows the NAD's configuration_path; ipamkit reads the flat file the node names
  const node: Record<string, string> = {
    ...(binary === "ik" ? { IPAMKIT_CONFIGURATION_PATH: paths.flatFile } : {}),
    ...(sliced ? { NODENAME: NODE } : {}),
  };
  const r = await runPlugin(
    cniEnv("ADD", `c${index}`, "net1", { CNI_ARGS: args, ...node }),
    conf,
    binary === "wb" ? whereaboutsBinary : PLUGIN,
  );
  return outcomeOf(r.code, r.json, r.stdout);
}

/**
 * For an entry with node_slice_size: its NodeSlicePool (`network_name`, else the network's name) in
 * `namespace`, its slices assigned to {@link NODE} as Whereabouts' controller assigns them. False
 * when the entry has no node slices.
 */
async function nodeSlicePool(entry: CorpusEntry, namespace: string): Promise<boolean> {
  const ipam = entry.conf.ipam;
  const sliceSize = ipam.node_slice_size;
  if (typeof sliceSize !== "string" || sliceSize === "") return false;
  const ranges = Array.isArray(ipam.ipRanges) ? (ipam.ipRanges as { range?: unknown }[]) : [];
  const range = typeof ipam.range === "string" ? ipam.range : ranges[0]?.range;
  let allocations: { nodeName: string; sliceRange: string }[];
  try {
    allocations = planNodeSlices({ range: String(range), sliceSize, allocations: [], nodes: [NODE], busy: () => false }).allocations;
  } catch {
    return true; // the controller cannot slice it: no NodeSlicePool, and every ADD fails on both
  }
  const name = typeof ipam.network_name === "string" && ipam.network_name !== "" ? ipam.network_name : String(entry.conf.name);
  await api.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: "whereabouts.cni.cncf.io",
    version: "v1alpha1",
    namespace,
    plural: "nodeslicepools",
    body: {
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "NodeSlicePool",
      metadata: { name },
      spec: { range, sliceSize },
      status: { allocations },
    },
  });
  return true;
}

/** Runs `fn` over `items`, `limit` at a time (the machine has 2 cores). */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return out;
}

describe("the Whereabouts config corpus", () => {
  it("names only documented differences", () => {
    const unknown = corpus.flatMap((e) => (e.differences ?? []).filter((id) => !known.has(id)).map((id) => `${e.id}: ${id}`));
    expect(unknown).toEqual([]);
    expect(corpus.length).toBeGreaterThanOrEqual(100);
  });

  it("every entry gives the same addresses from Whereabouts' binary and ipamkit's, on an empty pool, but for the documented differences", async () => {
    const results = await mapLimited(corpus, 3, async (entry, i) => {
      const [wb, ik] = await Promise.all([run(entry, i, "wb"), run(entry, i, "ik")]);
      return { entry, wb, ik };
    });
    const problems: string[] = [];
    for (const { entry, wb, ik } of results) {
      const said = (o: Outcome) => (o.ok ? o.ips.join(", ") : `error: ${o.error}`);
      const declared = entry.differences ?? [];
      const same = sameOutcome(wb, ik);
      if (!same && declared.length === 0) {
        problems.push(
          `${entry.id} (${entry.source}): Whereabouts ${said(wb)} | ipamkit ${said(ik)} — a difference docs/configuration.md does not list`,
        );
      }
      if (same && declared.length > 0) problems.push(`${entry.id}: declares ${declared.join(", ")} but both answer ${said(wb)}`);
      // node slices ipamkit accepts are served by both from the node's slice (not merely refused by both)
      if (entry.conf.ipam.node_slice_size !== undefined && entry.ipamkit === "accept" && !(wb.ok && ik.ok))
        problems.push(`${entry.id}: node slices not served: Whereabouts ${said(wb)} | ipamkit ${said(ik)}`);
    }
    expect(problems).toEqual([]);
  }, 900_000);
});
