import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { WhereaboutsBuild } from "@ipamkit/kube-apiserver-launcher";
import { ApiException, loadAllYaml } from "@kubernetes/client-node";
import { GROUP, type Interop, POOL_NAMESPACE, VERSION } from "./whereabouts.js";
import { poolName } from "./whereabouts-state.js";

// Pools in the exact shape Whereabouts v0.6.x writes (the Go module proxy no longer serves it, so
// they are written from the facts of whereabouts-compat.md): the CRDs of that time, which have no
// `ifname` (added by PR #471, v0.8.0) and so prune it; entries `{id, podref}`; two entries with the
// same id when one pod has two interfaces on the network (or a repeated ADD got a second address);
// ORIPs named by the address whose spec holds only `podref` (Whereabouts never fills containerid).

type Schema = { properties?: Record<string, Schema>; additionalProperties?: Schema } & Record<string, unknown>;
type Crd = { spec: { names: { plural: string }; versions: { schema: { openAPIV3Schema: Schema } }[] } };

/**
 * Whereabouts' v0.9.2 IPPool and ORIP CRDs with `ifname` removed from their schemas (the pre-v0.8
 * shape), written as files into `dir`. NodeSlicePool did not exist then.
 */
export function preV08Crds(build: WhereaboutsBuild, dir: string): string[] {
  const files: string[] = [];
  for (const source of [build.crds.ippools, build.crds.overlappingRangeIPReservations]) {
    const crd = loadAllYaml(readFileSync(source, "utf8"))[0] as Crd;
    for (const version of crd.spec.versions) {
      const spec = version.schema.openAPIV3Schema.properties?.spec;
      const holder = crd.spec.names.plural === "ippools" ? spec?.properties?.allocations?.additionalProperties : spec;
      if (holder?.properties?.ifname === undefined) throw new Error(`${source}: no ifname in the schema to remove`);
      delete holder.properties.ifname;
    }
    const file = join(dir, `pre-v0.8-${crd.spec.names.plural}.json`);
    writeFileSync(file, JSON.stringify(crd));
    files.push(file);
  }
  return files;
}

export interface LegacyEntry {
  offset: number;
  id: string;
  podref: string;
}

/**
 * Adds entries and their ORIPs as Whereabouts v0.6.x wrote them: the IPPool is created when it does
 * not exist yet, else updated under its resourceVersion.
 */
export async function writeLegacyPool(
  interop: Interop,
  range: string,
  entries: readonly LegacyEntry[],
  address: (offset: number) => string,
) {
  const base = { group: GROUP, version: VERSION, namespace: POOL_NAMESPACE };
  const added = Object.fromEntries(entries.map((e) => [String(e.offset), { id: e.id, podref: e.podref }]));
  const name = poolName(range);
  let pool: { metadata: Record<string, unknown>; spec: { range: string; allocations: Record<string, unknown> } } | undefined;
  try {
    pool = (await interop.custom.getNamespacedCustomObject({ ...base, plural: "ippools", name })) as NonNullable<typeof pool>;
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 404)) throw error;
  }
  if (pool === undefined)
    await interop.custom.createNamespacedCustomObject({
      ...base,
      plural: "ippools",
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: "IPPool", metadata: { name }, spec: { range, allocations: added } },
    });
  else {
    pool.spec.allocations = { ...pool.spec.allocations, ...added };
    await interop.custom.replaceNamespacedCustomObject({ ...base, plural: "ippools", name, body: pool });
  }
  for (const e of entries)
    await interop.custom.createNamespacedCustomObject({
      ...base,
      plural: "overlappingrangeipreservations",
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "OverlappingRangeIPReservation",
        metadata: { name: address(e.offset) },
        spec: { podref: e.podref },
      },
    });
}

const CRON_RECONCILER = join(import.meta.dirname, "..", "..", "cron-reconciler");

/**
 * ipamkit's reconciler program (examples/cron-reconciler, run from its sources) for one pass on
 * the interop server's pools: `--once`, no leader election, no grace period, plus `args`.
 */
export function runReconciler(interop: Interop, args: readonly string[] = []): Promise<{ code: number | null; output: string }> {
  const argv = [
    "--conditions=@ipamkit/source",
    "--import",
    "tsx",
    "src/main.ts",
    "--once",
    "--kubeconfig",
    interop.api.kubeconfigPath,
    "--leader-election",
    "false",
    "--grace",
    "0s",
    ...args,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, {
      cwd: CRON_RECONCILER,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "" },
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}
