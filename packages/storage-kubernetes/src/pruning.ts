import type { Pool } from "@ipamkit/core";
import { isObject, type KubeObject } from "./objects.js";

/**
 * Whether the API server kept ipamkit's entry fields (`poduid`, `created`, unknown fields) in the
 * IPPool it stored. A real kube-apiserver prunes fields that the installed CRD's structural schema
 * does not declare — Whereabouts' own CRD declares only `id`, `podref`, `ifname`. Pruning follows
 * the schema, not the entry, so the first entry that carries such fields decides.
 */
export function fieldsKept(pool: Pool, written: KubeObject): boolean {
  const allocations = written.spec?.allocations;
  for (const r of pool) {
    if (r.podUid === undefined && r.createdAt === undefined && r.extra === undefined) continue;
    const entry = isObject(allocations) ? allocations[r.offset.toString()] : undefined;
    if (!isObject(entry)) return false;
    if (r.podUid !== undefined && entry.poduid !== r.podUid) return false;
    if (r.createdAt !== undefined && entry.created !== r.createdAt) return false;
    return Object.keys(r.extra ?? {}).every((field) => Object.hasOwn(entry, field));
  }
  return true;
}
