import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  findWhereabouts,
  type KubeApiserver,
  startKubeApiserver,
  type WhereaboutsBuild,
  whereaboutsCrdFiles,
} from "@ipamkit/kube-apiserver-launcher";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { useNode } from "./node-files.js";
import { cniEnv, PLUGIN, type PluginRun, runPlugin } from "./run-plugin.js";

// Shared by the interop suites and the interop benchmark: a real kube-apiserver on Whereabouts'
// OWN CRDs (from the module test-infra/whereabouts builds), Whereabouts' real CNI binary and
// ipamkit's built binary, both reading the same flat file, on the same pools.

export const GROUP = "whereabouts.cni.cncf.io";
export const VERSION = "v1alpha1";
export const POOL_NAMESPACE = "whereabouts";

export type Binary = "ipamkit" | "whereabouts";

export interface Interop {
  api: KubeApiserver;
  whereabouts: WhereaboutsBuild;
  /** `whereabouts.d/whereabouts.conf`: datastore kubernetes, the test kubeconfig (context namespace {@link POOL_NAMESPACE}). */
  flatFile: string;
  custom: CustomObjectsApi;
  /** The binary's path: ipamkit's dist/ipamkit or Whereabouts' cached build. */
  binary(which: Binary): string;
  stop(): Promise<void>;
}

export interface InteropOptions {
  /** CRD files instead of Whereabouts' own (e.g. a pre-v0.8 shape). */
  crds?: readonly string[];
  /** Keys merged into the flat file (e.g. `log_level`). */
  flat?: Record<string, unknown>;
}

/**
 * A real kube-apiserver with Whereabouts' CRDs and the flat file both binaries read. Throws, naming
 * the command to run, when Whereabouts or kube-apiserver is not built (never a skip).
 */
export async function startInterop(options: InteropOptions = {}): Promise<Interop> {
  const whereabouts = findWhereabouts();
  const api = await startKubeApiserver({
    crds: options.crds ?? whereaboutsCrdFiles(whereabouts),
    namespaces: [POOL_NAMESPACE],
    namespace: POOL_NAMESPACE,
  });
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-wb-interop-"));
  mkdirSync(join(dir, "whereabouts.d"));
  const flatFile = join(dir, "whereabouts.d", "whereabouts.conf");
  // the shape Whereabouts' installer writes (script/lib.sh generateWhereaboutsConf)
  const flat = { datastore: "kubernetes", kubernetes: { kubeconfig: api.kubeconfigPath }, ...options.flat };
  writeFileSync(flatFile, JSON.stringify(flat, null, 2));
  // ipamkit finds it as the node's flat file (IPAMKIT_CONFIGURATION_PATH); Whereabouts by the NAD's configuration_path
  useNode(flatFile);
  return {
    api,
    whereabouts,
    flatFile,
    custom: api.kubeConfig.makeApiClient(CustomObjectsApi),
    binary: (which) => (which === "ipamkit" ? PLUGIN : whereabouts.binary),
    async stop() {
      await api.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A network config as Multus hands it to the IPAM plugin: ipam.type whereabouts, the flat file named. */
export function interopConf(interop: Interop, range: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    name: "interop",
    type: "macvlan",
    ipam: { type: "whereabouts", range, configuration_path: interop.flatFile, ...extra },
  };
}

/** One attachment: a container's interface, in a pod. */
export interface Attachment {
  id: string;
  ifname: string;
  /** The pod's name (namespace `default`). */
  pod: string;
}

export const attachment = (id: string, ifname = "net1", pod = `pod-${id}`): Attachment => ({ id, ifname, pod });
export const podref = (a: Attachment) => `default/${a.pod}`;

export interface CallResult {
  binary: Binary;
  command: string;
  attachment: Attachment;
  run: PluginRun;
  ms: number;
  /** The first address of an ADD's result, without its prefix length. */
  ip: string | undefined;
}

/** Runs one CNI call as Multus would (CNI_ARGS with the pod's namespace, name and UID). */
export async function cni(
  interop: Interop,
  binary: Binary,
  command: "ADD" | "DEL",
  a: Attachment,
  conf: Record<string, unknown>,
  /** Another node's environment (its flat file: IPAMKIT_CONFIGURATION_PATH) than the interop flat file. */
  node: Record<string, string> = {},
): Promise<CallResult> {
  const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${a.pod};K8S_POD_INFRA_CONTAINER_ID=${a.id};K8S_POD_UID=uid-${a.pod}`;
  const started = performance.now();
  const run = await runPlugin(cniEnv(command, a.id, a.ifname, { CNI_ARGS: args, ...node }), conf, interop.binary(binary));
  const ms = performance.now() - started;
  const ips = run.json?.ips as { address?: string }[] | undefined;
  const ip = run.code === 0 ? ips?.[0]?.address?.split("/")[0] : undefined;
  return { binary, command, attachment: a, run, ms, ip };
}

/** What a failed call said, shortened for an assertion message (Whereabouts logs a lot at debug). */
export function describeCall(r: CallResult): string {
  const tail = (text: string) => text.trim().split("\n").slice(-4).join(" | ");
  return `${r.binary} ${r.command} ${r.attachment.id}/${r.attachment.ifname}: exit ${r.run.code} stdout=${tail(r.run.stdout)} stderr=${tail(r.run.stderr)}`;
}

/** The calls that did not exit 0 (their descriptions), for `expect(failures(...)).toEqual([])`. */
export const failures = (results: readonly CallResult[]) => results.filter((r) => r.run.code !== 0).map(describeCall);

/** The calls whose address another successful call also got. */
export function duplicateAddresses(results: readonly CallResult[]): string[] {
  const seen = new Map<string, string>();
  const duplicates: string[] = [];
  for (const r of results) {
    if (r.ip === undefined) continue;
    const key = `${r.attachment.id}/${r.attachment.ifname}`;
    const other = seen.get(r.ip);
    if (other !== undefined && other !== key) duplicates.push(`${r.ip}: ${other} and ${key}`);
    seen.set(r.ip, key);
  }
  return duplicates;
}
