import type { Pool } from "@ipamkit/core";
import { isObject, type KubeObject } from "./objects.js";

/**
 * Whether the API server kept ipamkit's entry fields (`poduid`, `created`, `sticky`, `released`, unknown fields) in the
 * IPPool it stored. A real kube-apiserver prunes fields that the installed CRD's structural schema
 * does not declare — Whereabouts' own CRD declares only `id`, `podref`, `ifname`. Pruning follows
 * the schema, not the entry, so the first entry that carries such fields decides.
 */
export function fieldsKept(pool: Pool, written: KubeObject): boolean {
  const allocations = written.spec?.allocations;
  for (const r of pool) {
    if (r.podUid === undefined && r.createdAt === undefined && r.sticky === undefined && r.extra === undefined) continue;
    const entry = isObject(allocations) ? allocations[r.offset.toString()] : undefined;
    if (!isObject(entry)) return false;
    if (r.podUid !== undefined && entry.poduid !== r.podUid) return false;
    if (r.createdAt !== undefined && entry.created !== r.createdAt) return false;
    if (r.sticky !== undefined && entry.sticky !== r.sticky) return false;
    if (r.releasedAt !== undefined && entry.released !== r.releasedAt) return false;
    return Object.keys(r.extra ?? {}).every((field) => Object.hasOwn(entry, field));
  }
  return true;
}

/**
 * Whether the API server pruned the `ifname` of an entry ipamkit wrote with one — an IPPool CRD
 * from before Whereabouts v0.8 does not declare it. Then ipamkit records interfaces in the
 * `ipamkit.io/ifnames` annotation instead (ippool.ts).
 */
export function ifNamesPruned(pool: Pool, written: KubeObject): boolean {
  const allocations = written.spec?.allocations;
  for (const r of pool) {
    if (r.key.ifName === "") continue;
    const entry = isObject(allocations) ? allocations[r.offset.toString()] : undefined;
    return !isObject(entry) || entry.ifname !== r.key.ifName;
  }
  return false;
}

/**
 * One warning per process (a CNI plugin call is one process; an agent serves many calls): the
 * installed CRD does not change from one write to the next, so telling it on every write only
 * buries the rest of stderr.
 */
let warned = false;

export function warnPruningOnce(warn: (message: string) => void, object: string, ifNames: boolean): void {
  if (warned) return;
  warned = true;
  const lost = ifNames ? "ifname, poduid, created, sticky" : "poduid, created, sticky, or unknown entry fields";
  warn(
    `[ipamkit] [storage-kubernetes] the API server drops fields ipamkit writes into IPPool entries (${lost}; first seen on ${object}): ` +
      `its IPPool CRD is Whereabouts' own${ifNames ? ", from before v0.8" : ""}, which does not declare them. ipamkit keeps working` +
      `${ifNames ? " (interface names are kept in the ipamkit.io/ifnames annotation)" : ""}, but pod UIDs are lost for reconciling, and sticky addresses degrade to non-sticky (freed at DEL). ` +
      "Apply ipamkit's CRDs, a superset of Whereabouts' that Whereabouts also runs on: " +
      "kubectl apply -f manifests/crds.yaml of @ipamkit/storage-kubernetes (packages/storage-kubernetes/manifests/crds.yaml). " +
      "Reported once per process.",
  );
}
