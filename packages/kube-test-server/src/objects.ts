import { randomInt, randomUUID } from "node:crypto";
import { decodeObject } from "./decode.js";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  invalid,
  invalidValue,
  namespaceNotFound,
  notFound,
  plainError,
  preconditionFailed,
  resourceDetails,
} from "./errors.js";
import { clone, deepEqual, isObject, type Json, type JsonObject, type KubeObject, meta, str } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { rfc3339 } from "./microtime.js";
import { applyPatch } from "./patch.js";
import { schemaErrors } from "./schema.js";
import type { ObjectStore } from "./store.js";
import { isValidNamespace, objectMetaCreateErrors, objectMetaUpdateErrors } from "./validation.js";

/** What the verbs work on. */
export interface Registry {
  readonly store: ObjectStore;
  /** etcd's request limit: a larger object is refused as etcd refuses it. */
  readonly maxObjectBytes: number;
  now(): Date;
}

export interface Target {
  readonly kind: KindSpec;
  readonly namespace: string;
  readonly name: string;
  readonly subresource?: string | undefined;
}

export interface Written {
  readonly code: 200 | 201;
  readonly object: KubeObject;
  readonly warnings: readonly string[];
}

export interface WriteOptions {
  readonly fieldValidation: string | null;
}

export interface DeleteOptions {
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly gracePeriodSeconds?: number;
}

/**
 * What etcd's request-size check sees for a write: the stored object plus the transaction around it —
 * its key twice (the compare and the put) and ~16 bytes of framing. Calibrated against kube-apiserver
 * v1.37.2 on etcd 3.7.0, which drops managedFields from an object that would not fit with them: the
 * largest IPPool agrees to the entry (storage-kubernetes' object-size test runs on both).
 */
function requestBytes(kind: KindSpec, object: KubeObject): number {
  const m = meta(object);
  const key = `/registry/${kind.builtIn ? "" : `${kind.group}/`}${kind.plural}/${str(m, "namespace")}/${str(m, "name")}`;
  return Buffer.byteLength(JSON.stringify(object)) + 2 * Buffer.byteLength(key) + 16;
}

function sized(registry: Registry, kind: KindSpec, object: KubeObject): { object: KubeObject; bytes: number } {
  const bytes = requestBytes(kind, object);
  // kube-apiserver passes etcd's error through unwrapped: HTTP 500, no reason (kubernetes/kubernetes#112152).
  if (bytes > registry.maxObjectBytes) throw plainError("etcdserver: request is too large");
  return { object, bytes };
}

/** A deletion writes no value to etcd (no size limit), but its event still holds the object in the history. */
const deletion = (object: KubeObject) => ({ object, bytes: Buffer.byteLength(JSON.stringify(object)) });

function withResourceVersion(object: KubeObject, rv: string): KubeObject {
  meta(object).resourceVersion = rv;
  return object;
}

const hasFinalizers = (object: KubeObject) => {
  const f = meta(object).finalizers;
  return Array.isArray(f) && f.length > 0;
};

const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** SimpleNameGenerator: the prefix (cut to 58 characters) and 5 random characters. */
function generateName(prefix: string): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
  return prefix.slice(0, 58) + suffix;
}

function kindErrors(kind: KindSpec, object: KubeObject): FieldError[] {
  return [...(kind.builtIn ? [] : schemaErrors(object, kind.schema)), ...(kind.validate?.(object) ?? [])];
}

export function getObject(registry: Registry, target: Target): KubeObject {
  const object = registry.store.get(target.kind.plural, target.namespace, target.name);
  if (object === undefined) throw notFound(target.kind, target.name);
  return object;
}

/** The create flow: system fields, generateName (8 attempts, like RetryGenerateName), validation, AlreadyExists. */
function insert(registry: Registry, kind: KindSpec, incoming: KubeObject, rejectResourceVersion: boolean): KubeObject {
  const namespace = str(meta(incoming), "namespace");
  if (!isValidNamespace(namespace)) throw namespaceNotFound(namespace);
  const resourceVersion = str(meta(incoming), "resourceVersion");
  const generate = str(meta(incoming), "name") === "" && str(meta(incoming), "generateName") !== "";
  for (let attempt = 1; ; attempt++) {
    const object = clone(incoming);
    const m = meta(object);
    m.uid = randomUUID();
    m.creationTimestamp = rfc3339(registry.now());
    for (const key of ["deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "resourceVersion"]) delete m[key];
    if (kind.tracksGeneration) m.generation = 1;
    else delete m.generation;
    if (generate) m.name = generateName(str(m, "generateName"));
    kind.prepareForCreate?.(object);
    const name = str(m, "name");
    const errors = [...objectMetaCreateErrors(m), ...kindErrors(kind, object)];
    if (errors.length > 0) throw invalid(kind.group, kind.kind, name, errors);
    if (rejectResourceVersion && resourceVersion !== "") throw plainError("resourceVersion should not be set on objects to be created");
    const existing = registry.store.get(kind.plural, namespace, name);
    if (existing !== undefined) {
      if (generate && attempt < 8) continue;
      throw alreadyExists(kind, name, meta(existing).deletionTimestamp !== undefined);
    }
    return registry.store.write(kind.plural, "ADDED", undefined, (rv) => sized(registry, kind, withResourceVersion(object, rv))).object;
  }
}

export function createObject(registry: Registry, kind: KindSpec, namespace: string, body: Json, options: WriteOptions): Written {
  const { object, warnings } = decodeObject(body, { kind, namespace, fieldValidation: options.fieldValidation, fromPatch: false });
  return { code: 201, object: insert(registry, kind, object, true), warnings };
}

function checkName(object: KubeObject, name: string): void {
  const actual = str(meta(object), "name");
  if (actual !== name) throw badRequest(`the name of the object (${actual}) does not match the name on the URL (${name})`);
}

/** A PUT whose uid differs: the storage layer's precondition error, passed through with its etcd key. */
const uidPrecondition = ({ kind, namespace, name }: Target, expected: string, actual: string) =>
  conflict(
    kind,
    name,
    `StorageError: invalid object, Code: 4, Key: /registry/${kind.group === "" || kind.builtIn ? "" : `${kind.group}/`}${kind.plural}/${namespace}/${name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${expected}, UID in object meta: ${actual}`,
  );

/** The update flow shared by PUT and PATCH: resourceVersion check, server-owned fields kept, validation, no-op detection. */
function update(registry: Registry, target: Target, existing: KubeObject, incoming: KubeObject, fromPatch: boolean): KubeObject {
  const { kind, name } = target;
  const old = meta(existing);
  const requested = str(meta(incoming), "resourceVersion");
  if (requested !== "" && !/^\d+$/.test(requested))
    throw badRequest(`invalid resource version ${JSON.stringify(requested)}: must be a decimal integer`);
  if (requested === "") {
    if (!kind.allowUnconditionalUpdate && !fromPatch)
      throw invalid(kind.group, kind.plural, name, [
        invalidValue("metadata.resourceVersion", { raw: "0" }, "must be specified for an update"),
      ]);
  } else if (requested !== str(old, "resourceVersion")) throw conflict(kind, name);

  const next = clone(incoming);
  const m = meta(next);
  if (old.generation === undefined) delete m.generation;
  else m.generation = old.generation;
  kind.prepareForUpdate?.(next, existing, target.subresource);
  if (str(m, "uid") === "") m.uid = old.uid ?? "";
  m.creationTimestamp = old.creationTimestamp ?? null;
  for (const key of ["deletionTimestamp", "deletionGracePeriodSeconds"])
    if (m[key] === undefined && old[key] !== undefined) m[key] = old[key] ?? null;
  delete m.managedFields;
  delete m.selfLink;
  const errors = [
    ...objectMetaUpdateErrors(m, old),
    ...(kind.builtIn ? [] : schemaErrors(next, kind.schema)),
    ...(kind.validateUpdate?.(next, existing, target.subresource) ?? []),
  ];
  if (errors.length > 0) throw invalid(kind.group, kind.kind, name, errors);
  if (kind.tracksGeneration && !deepEqual(kind.generationContent(next), kind.generationContent(existing)))
    m.generation = (typeof old.generation === "number" ? old.generation : 0) + 1;

  // The last finalizer removed from an object being deleted (without grace): it goes now.
  if (
    old.deletionTimestamp !== undefined &&
    !hasFinalizers(next) &&
    !(typeof old.deletionGracePeriodSeconds === "number" && old.deletionGracePeriodSeconds > 0)
  )
    return registry.store.write(kind.plural, "DELETED", existing, (rv) => deletion(withResourceVersion(next, rv))).object;

  m.resourceVersion = old.resourceVersion ?? "";
  // etcd3's GuaranteedUpdate writes nothing when the bytes are unchanged: same resourceVersion, no event.
  if (deepEqual(next, existing)) return existing;
  return registry.store.write(kind.plural, "MODIFIED", existing, (rv) => sized(registry, kind, withResourceVersion(next, rv))).object;
}

export function replaceObject(registry: Registry, target: Target, body: Json, options: WriteOptions): Written {
  const { kind, name } = target;
  const { object, warnings } = decodeObject(body, {
    kind,
    namespace: target.namespace,
    fieldValidation: options.fieldValidation,
    fromPatch: false,
  });
  checkName(object, name);
  const uid = str(meta(object), "uid");
  const existing = registry.store.get(kind.plural, target.namespace, name);
  if (existing === undefined) {
    if (target.subresource !== undefined || !kind.allowCreateOnUpdate) throw notFound(kind, name);
    if (uid !== "") throw uidPrecondition(target, uid, "");
    return { code: 201, object: insert(registry, kind, object, false), warnings };
  }
  if (uid !== "" && uid !== str(meta(existing), "uid")) throw uidPrecondition(target, uid, str(meta(existing), "uid"));
  return { code: 200, object: update(registry, target, existing, object, false), warnings };
}

export function patchObject(registry: Registry, target: Target, body: string, contentType: string, options: WriteOptions): Written {
  const existing = getObject(registry, target);
  const patched = applyPatch(existing, body, contentType, target.kind);
  const { object, warnings } = decodeObject(patched, {
    kind: target.kind,
    namespace: target.namespace,
    fieldValidation: options.fieldValidation,
    fromPatch: true,
  });
  checkName(object, target.name);
  return { code: 200, object: update(registry, target, existing, object, true), warnings };
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
