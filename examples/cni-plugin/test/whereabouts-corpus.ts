import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * One config of the corpus (test/whereabouts-corpus.json): Whereabouts' own README, docs, unit-test
 * and e2e configs (module github.com/k8snetworkplumbingwg/whereabouts v0.9.2, file:line in
 * `source`) and the variants users write. `flat` is a flat file to read beside it; `ipamkit` what
 * ipamkit's config loader answers; `differences` the ids (packages/cni whereabouts-differences.ts,
 * docs/configuration.md) of the deliberate differences this config shows against Whereabouts'
 * binary on an empty pool.
 */
export interface CorpusEntry {
  id: string;
  source: string;
  conf: Record<string, unknown> & { ipam: Record<string, unknown> };
  flat?: Record<string, unknown>;
  ipamkit: "accept" | "refuse";
  differences?: string[];
  note?: string;
}

export const CORPUS_PATH = join(import.meta.dirname, "whereabouts-corpus.json");

export function readCorpus(): CorpusEntry[] {
  return JSON.parse(readFileSync(CORPUS_PATH, "utf8")) as CorpusEntry[];
}

/**
 * The entry as both binaries get it in a test: its `kubernetes.kubeconfig` (flat file's too) and
 * `configuration_path` pointed at the test's own files; nothing else changes.
 */
export function placed(
  entry: CorpusEntry,
  paths: { kubeconfig: string; flatFile: string },
): { conf: Record<string, unknown>; flat: Record<string, unknown> } {
  const conf = structuredClone(entry.conf);
  const ipam = conf.ipam;
  const kube = ipam.kubernetes;
  if (kube !== null && typeof kube === "object" && "kubeconfig" in kube) ipam.kubernetes = { ...kube, kubeconfig: paths.kubeconfig };
  ipam.configuration_path = paths.flatFile;
  const flat = structuredClone(entry.flat ?? { datastore: "kubernetes", kubernetes: {} });
  flat.kubernetes = { ...((flat.kubernetes as object | undefined) ?? {}), kubeconfig: paths.kubeconfig };
  return { conf, flat };
}

/** What an ADD answered: ok, and each address with its gateway (`ip/prefix via gw`), in result order. */
export interface Outcome {
  ok: boolean;
  ips: string[];
  /** The error message, when not ok. */
  error?: string;
}

/** Reads a CNI ADD answer of any version (0.1.0/0.2.0 `ip4`/`ip6`, later `ips[]`). */
export function outcomeOf(code: number | null, json: Record<string, unknown> | undefined, stdout: string): Outcome {
  if (code !== 0 || json === undefined) {
    const msg = typeof json?.msg === "string" ? json.msg : stdout.trim().slice(0, 300);
    return { ok: false, ips: [], error: msg };
  }
  const show = (address: unknown, gateway: unknown) => `${String(address)}${typeof gateway === "string" ? ` via ${gateway}` : ""}`;
  if (Array.isArray(json.ips))
    return { ok: true, ips: json.ips.map((ip: { address?: unknown; gateway?: unknown }) => show(ip.address, ip.gateway)) };
  const legacy = [json.ip4, json.ip6].filter((x): x is { ip?: unknown; gateway?: unknown } => x !== null && typeof x === "object");
  return { ok: true, ips: legacy.map((x) => show(x.ip, x.gateway)) };
}

export const sameOutcome = (a: Outcome, b: Outcome) => a.ok === b.ok && (!a.ok || JSON.stringify(a.ips) === JSON.stringify(b.ips));
