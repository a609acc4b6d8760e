import { badRequest, invalid, preconditionFailed, resourceDetails } from "./errors.js";
import { clone, isObject, type Json, type JsonObject, type KubeObject, meta, str } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { rfc3339 } from "./microtime.js";
import { deletion, getObject, hasFinalizers, type Registry, sized, type Target, type Written, withResourceVersion } from "./objects.js";

export interface DeleteOptions {
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly gracePeriodSeconds?: number;
}

function markDeleting(registry: Registry, kind: KindSpec, existing: KubeObject, graceSeconds: number): KubeObject {
  const next = clone(existing);
  const m = meta(next);
  const old = meta(existing);
  if (old.deletionTimestamp === undefined && typeof old.generation === "number" && old.generation > 0) m.generation = old.generation + 1;
  m.deletionTimestamp = rfc3339(new Date(registry.now().getTime() + graceSeconds * 1000));
  m.deletionGracePeriodSeconds = graceSeconds;
  return registry.store.write(kind.plural, "MODIFIED", existing, (rv) => sized(registry, kind, withResourceVersion(next, rv))).object;
}

/**
 * DELETE: preconditions (409), graceful deletion for scheduled pods, finalizers (the object stays,
 * marked with deletionTimestamp), otherwise gone at once. Answers with the object, as the API
 * server does: for an immediate deletion, its last state at the deletion's resourceVersion.
 */
export function deleteObject(registry: Registry, target: Target, options: DeleteOptions): Written {
  const { kind, name } = target;
  const existing = getObject(registry, target);
  const old = meta(existing);
  const { uid, resourceVersion } = options.preconditions ?? {};
  if (uid !== undefined && uid !== str(old, "uid"))
    throw preconditionFailed(
      kind,
      name,
      `the UID in the precondition (${uid}) does not match the UID in record (${str(old, "uid")}). The object might have been deleted and then recreated`,
    );
  if (resourceVersion !== undefined && resourceVersion !== str(old, "resourceVersion"))
    throw preconditionFailed(
      kind,
      name,
      `the ResourceVersion in the precondition (${resourceVersion}) does not match the ResourceVersion in record (${str(old, "resourceVersion")}). The object might have been modified`,
    );
  const grace = kind.deletionGracePeriod?.(existing, options.gracePeriodSeconds) ?? 0;
  const current = typeof old.deletionGracePeriodSeconds === "number" ? old.deletionGracePeriodSeconds : undefined;
  const deleting = old.deletionTimestamp !== undefined;
  if (grace > 0) {
    if (deleting && current !== undefined && current <= grace) return { code: 200, object: existing, warnings: [] };
    return { code: 200, object: markDeleting(registry, kind, existing, grace), warnings: [] };
  }
  if (hasFinalizers(existing)) {
    if (deleting && (current ?? 0) === 0) return { code: 200, object: existing, warnings: [] };
    return { code: 200, object: markDeleting(registry, kind, existing, 0), warnings: [] };
  }
  const event = registry.store.write(kind.plural, "DELETED", existing, (rv) => deletion(withResourceVersion(clone(existing), rv)));
  if (kind.returnDeletedObject !== true) {
    // the generic registry answers a Status for an immediate deletion (custom resources, leases)
    const details = { ...(resourceDetails(kind, name) as JsonObject), uid: str(old, "uid") };
    return { code: 200, object: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details }, warnings: [] };
  }
  // pods answer the object as BeforeDelete left it: deletionTimestamp now, grace 0, generation bumped once
  const answered = clone(event.object);
  const m = meta(answered);
  if (!deleting && typeof old.generation === "number" && old.generation > 0) m.generation = old.generation + 1;
  m.deletionTimestamp = rfc3339(registry.now());
  m.deletionGracePeriodSeconds = 0;
  return { code: 200, object: answered, warnings: [] };
}

/** DeleteOptions from the query and (overriding) a JSON body. */
export function deleteOptions(query: URLSearchParams, body: Json | undefined): DeleteOptions {
  const grace = (value: unknown): number | undefined => {
    if (value === undefined || value === null) return undefined;
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n)) throw badRequest(`gracePeriodSeconds: invalid value ${JSON.stringify(value)}`);
    return n;
  };
  const checkPolicy = (policy: unknown) => {
    if (policy !== undefined && policy !== null && !["Orphan", "Background", "Foreground"].includes(String(policy)))
      throw invalid("meta.k8s.io", "DeleteOptions", "", [
        { type: "Unsupported value", field: "propagationPolicy", value: String(policy), detail: '"Foreground", "Background", "Orphan"' },
      ]);
  };
  checkPolicy(query.get("propagationPolicy") ?? undefined);
  let gracePeriodSeconds = grace(query.get("gracePeriodSeconds") ?? undefined);
  if (body === undefined) return gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds };
  if (!isObject(body)) throw badRequest("DeleteOptions must be a JSON object");
  checkPolicy(body.propagationPolicy);
  if (body.dryRun !== undefined) throw badRequest("dryRun is not supported by kube-test-server");
  gracePeriodSeconds = grace(body.gracePeriodSeconds) ?? gracePeriodSeconds;
  const p = body.preconditions;
  const preconditions =
    isObject(p) && (typeof p.uid === "string" || typeof p.resourceVersion === "string")
      ? {
          ...(typeof p.uid === "string" ? { uid: p.uid } : {}),
          ...(typeof p.resourceVersion === "string" ? { resourceVersion: p.resourceVersion } : {}),
        }
      : undefined;
  return { ...(preconditions === undefined ? {} : { preconditions }), ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }) };
}
