import type { IpamStore } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import { type AuditReport, audit, type Finding, type FindingKind } from "./audit.js";
import { CliError } from "./errors.js";
import type { Progress } from "./inventory.js";
import { classifyNad, type NadFinding, type NadObject } from "./preflight-nads.js";
import type { StoreSpec } from "./store-spec.js";

// `ipamkit preflight`: is swapping Whereabouts' binary for ipamkit's safe on this cluster? Every NAD's
// IPAM config (refused ones fail every ADD the moment the binary is swapped) and every pool,
// ORIP and NodeSlicePool in the pool namespace (what ipamkit would refuse, or repair by itself).

/** What ipamkit does about a pool finding: refuse (the swap is not safe) or repair (its reconciler mends it). */
export type PoolVerdict = "refuse" | "repair";

const VERDICTS: Record<FindingKind, { verdict: PoolVerdict; fix: string }> = {
  "unreadable-pool": { verdict: "refuse", fix: "ipamkit fails every ADD on this pool; fix or delete the object (see the detail)" },
  "held-twice": { verdict: "refuse", fix: "one address is held twice already: release one of the holders (ipamkit release --ip)" },
  "key-twice": { verdict: "refuse", fix: "one attachment holds two addresses of a network: release the wrong one (ipamkit release --ip)" },
  "claim-without-entry": { verdict: "repair", fix: "a dangling ORIP: ipamkit's reconciler removes it" },
  "claim-names-other-entry": { verdict: "repair", fix: "ipamkit's reconciler rewrites the ORIP to name the entry" },
  "entry-without-claim": { verdict: "repair", fix: "ipamkit's reconciler writes the missing ORIP" },
  "legacy-entry": { verdict: "repair", fix: "a pre-v0.8 entry without ifname: ipamkit adopts it on its container's next ADD or DEL" },
  "pod-gone": { verdict: "repair", fix: "ipamkit's reconciler releases it" },
};

export interface PoolFinding extends Finding {
  verdict: PoolVerdict;
  fix: string;
}

export interface PreflightReport {
  nads: NadFinding[];
  /** NADs listed (all, not only ours). */
  nadsListed: number;
  namespace: string;
  pools: number;
  reservations: number;
  nodeSlicePools: { name: string; range: string; sliceSize: string; slices: number; assigned: number }[];
  poolFindings: PoolFinding[];
  /** True when no NAD is refused and no pool finding is a refusal. */
  safe: boolean;
}

const NAD = { group: "k8s.cni.cncf.io", version: "v1", plural: "network-attachment-definitions" };
const NODE_SLICE = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", plural: "nodeslicepools" };

type Listed = { items?: unknown[]; metadata?: { continue?: string } };

/** Every object of a cluster-wide (namespace undefined) or namespaced list, paged; undefined when the resource does not exist (no CRD). */
async function listAll(kubeConfig: KubeConfig, resource: typeof NAD, namespace?: string): Promise<unknown[] | undefined> {
  const { CustomObjectsApi } = await import("@kubernetes/client-node");
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const out: unknown[] = [];
  let next: string | undefined;
  try {
    do {
      const page = (
        namespace === undefined
          ? await api.listClusterCustomObject({ ...resource, limit: 500, ...(next === undefined ? {} : { _continue: next }) })
          : await api.listNamespacedCustomObject({ ...resource, namespace, limit: 500, ...(next === undefined ? {} : { _continue: next }) })
      ) as Listed;
      out.push(...(page.items ?? []));
      next = page.metadata?.continue || undefined;
    } while (next !== undefined);
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw new CliError(`cannot list ${resource.plural}.${resource.group}: ${(error as Error).message.split("\n")[0]}`);
  }
  return out;
}

interface NodeSliceObject {
  metadata?: { name?: string };
  spec?: { range?: unknown; sliceSize?: unknown };
  status?: { allocations?: { nodeName?: unknown; sliceRange?: unknown }[] };
}

export interface PreflightOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  store: IpamStore;
  spec: StoreSpec;
  /** The flat file's text (`--flat-file`), read as the node reads its whereabouts.conf. */
  flat: string | undefined;
  settleMs: number;
  progress: Progress;
}

export async function preflight(options: PreflightOptions): Promise<PreflightReport> {
  const { kubeConfig, namespace, progress } = options;
  progress("listing NetworkAttachmentDefinitions");
  const nadObjects = (await listAll(kubeConfig, NAD)) ?? [];
  const nads = nadObjects.flatMap((nad) => classifyNad(nad as NadObject, options.flat));
  progress(`reading pools and ORIPs in namespace ${namespace}`);
  const report: AuditReport = await audit({
    store: options.store,
    spec: options.spec,
    claims: true,
    graceMs: 0,
    settleMs: options.settleMs,
    now: () => new Date(),
    progress,
  });
  const slices = ((await listAll(kubeConfig, NODE_SLICE, namespace)) ?? []) as NodeSliceObject[];
  const nodeSlicePools = slices.map((s) => ({
    name: s.metadata?.name ?? "",
    range: String(s.spec?.range ?? ""),
    sliceSize: String(s.spec?.sliceSize ?? ""),
    slices: s.status?.allocations?.length ?? 0,
    assigned: (s.status?.allocations ?? []).filter((a) => typeof a.nodeName === "string" && a.nodeName !== "").length,
  }));
  const poolFindings = report.findings.map((f) => ({ ...f, ...VERDICTS[f.kind] }));
  const safe = nads.every((n) => n.verdict !== "refused") && poolFindings.every((f) => f.verdict !== "refuse");
  return {
    nads,
    nadsListed: nadObjects.length,
    namespace,
    pools: report.pools,
    reservations: report.reservations,
    nodeSlicePools,
    poolFindings,
    safe,
  };
}

const LABEL: Record<NadFinding["verdict"], string> = { accepted: "ok      ", warnings: "warnings", refused: "REFUSED " };

/** The report for a terminal: one line per NAD config (warnings and refusals indented below), then the pools. */
export function preflightText(r: PreflightReport): string {
  const lines = [`NetworkAttachmentDefinitions: ${r.nadsListed} listed, ${r.nads.length} IPAM config(s) naming whereabouts or ipamkit`];
  for (const n of r.nads) {
    const what = n.verdict === "accepted" ? "accepted as is" : n.verdict === "warnings" ? "accepted with warnings:" : "refused:";
    lines.push(`  ${LABEL[n.verdict]} ${n.nad}${n.plugin === undefined ? "" : ` ${n.plugin}`}: ${what}`);
    for (const line of n.lines) lines.push(`             - ${line}`);
  }
  lines.push(
    `Pools in namespace ${r.namespace}: ${r.pools} IPPool(s), ${r.reservations} reservation(s), ${r.nodeSlicePools.length} NodeSlicePool(s)`,
  );
  for (const s of r.nodeSlicePools) {
    lines.push(`  slices   ${s.name}: ${s.range} in ${s.sliceSize} slices, ${s.assigned} of ${s.slices} assigned to nodes`);
  }
  for (const f of r.poolFindings) {
    const where = [f.pool, f.address, f.key].filter((x) => x !== undefined).join(" ");
    lines.push(`  ${f.verdict === "refuse" ? "REFUSED " : "repair  "} ${f.kind} ${where}: ${f.detail} — ${f.fix}`);
  }
  const refused = r.nads.filter((n) => n.verdict === "refused").length + r.poolFindings.filter((f) => f.verdict === "refuse").length;
  lines.push(
    r.safe
      ? "The swap is safe: ipamkit accepts every config and every pool (warnings and repairs above are handled)."
      : `The swap is NOT safe: ${refused} refusal(s) above; fix them first (each says how).`,
  );
  return `${lines.join("\n")}\n`;
}
