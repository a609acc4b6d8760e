import { type FieldError, forbidden, invalidValue, required } from "./errors.js";
import { clone, deepEqual, isObject, type Json, type JsonObject, type KubeObject, meta, obj, str } from "./json.js";
import { ANY, METADATA_FIELDS, objectSchema } from "./kind-helpers.js";
import type { KindSpec } from "./kinds.js";
import type { Schema } from "./schema.js";
import { dnsLabelErrors, dnsSubdomainErrors } from "./validation.js";

// core/v1 Pod (pkg/registry/core/pod): the status is reset on create and owned by pods/status,
// most of the spec is immutable, scheduled pods are deleted gracefully. Defaulting and validation
// cover the common fields only; there is no admission (no service account, no tolerations added).

const OPEN_OBJECT: Schema = { type: "object", additionalProperties: ANY };
const POD: Schema = objectSchema({ spec: OPEN_OBJECT, status: OPEN_OBJECT });

function containers(spec: JsonObject | undefined, key: "containers" | "initContainers"): JsonObject[] {
  const list = spec?.[key];
  return Array.isArray(list) ? list.filter(isObject) : [];
}

function pullPolicy(image: string): string {
  if (image.includes("@")) return "IfNotPresent";
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  const tag = colon > slash ? image.slice(colon + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

function defaults(pod: KubeObject): void {
  const spec = obj(pod, "spec");
  if (spec === undefined) return;
  spec.restartPolicy ??= "Always";
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  for (const c of [...containers(spec, "initContainers"), ...containers(spec, "containers")]) {
    c.terminationMessagePath ??= "/dev/termination-log";
    c.terminationMessagePolicy ??= "File";
    c.imagePullPolicy ??= pullPolicy(str(c, "image"));
    c.resources ??= {};
  }
}

/** GetPodQOS, for cpu and memory. */
function qosClass(spec: JsonObject | undefined): string {
  const all = [...containers(spec, "initContainers"), ...containers(spec, "containers")];
  const quantities = (c: JsonObject, which: "requests" | "limits") => obj(obj(c, "resources"), which) ?? {};
  const relevant = (q: JsonObject) => ["cpu", "memory"].filter((r) => q[r] !== undefined);
  if (all.every((c) => relevant(quantities(c, "requests")).length === 0 && relevant(quantities(c, "limits")).length === 0))
    return "BestEffort";
  const guaranteed = all.every((c) => {
    const limits = quantities(c, "limits");
    const requests = quantities(c, "requests");
    return ["cpu", "memory"].every((r) => limits[r] !== undefined && (requests[r] === undefined || deepEqual(requests[r], limits[r])));
  });
  return guaranteed ? "Guaranteed" : "Burstable";
}

function validate(pod: KubeObject): FieldError[] {
  const spec = obj(pod, "spec");
  const errors: FieldError[] = [];
  const list = containers(spec, "containers");
  if (list.length === 0) errors.push(required("spec.containers"));
  const seen = new Set<string>();
  list.forEach((c, i) => {
    const at = `spec.containers[${i}]`;
    const name = str(c, "name");
    if (name === "") errors.push(required(`${at}.name`));
    else for (const m of dnsLabelErrors(name)) errors.push(invalidValue(`${at}.name`, name, m));
    if (seen.has(name)) errors.push({ type: "Duplicate value", field: `${at}.name`, value: name });
    seen.add(name);
    if (str(c, "image") === "") errors.push(required(`${at}.image`));
  });
  const restartPolicy = str(spec, "restartPolicy");
  if (!["Always", "OnFailure", "Never"].includes(restartPolicy))
    errors.push({
      type: "Unsupported value",
      field: "spec.restartPolicy",
      value: restartPolicy,
      detail: 'supported values: "Always", "OnFailure", "Never"',
    });
  const nodeName = str(spec, "nodeName");
  if (nodeName !== "") for (const m of dnsSubdomainErrors(nodeName)) errors.push(invalidValue("spec.nodeName", nodeName, m));
  return errors;
}

const IMMUTABLE_SPEC =
  "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

function validateUpdate(pod: KubeObject, old: KubeObject, subresource: string | undefined): FieldError[] {
  if (subresource === "status") return [];
  const errors = validate(pod);
  const spec = obj(pod, "spec");
  const allowed = clone((obj(old, "spec") ?? {}) as Json) as JsonObject;
  for (const key of ["containers", "initContainers"] as const) {
    const now = containers(spec, key);
    const before = containers(allowed, key);
    if (now.length !== before.length) continue;
    before.forEach((c, i) => {
      const image = now[i]?.image;
      if (image === undefined) delete c.image;
      else c.image = image;
    });
  }
  for (const key of ["activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"]) {
    const value = spec?.[key];
    if (value === undefined) delete allowed[key];
    else allowed[key] = value;
  }
  if (!deepEqual(allowed, spec ?? {})) errors.push(forbidden("spec", IMMUTABLE_SPEC));
  return errors;
}

function prepareForUpdate(pod: KubeObject, old: KubeObject, subresource: string | undefined): void {
  const keep = (target: JsonObject, source: JsonObject, key: string) => {
    if (source[key] === undefined) delete target[key];
    else target[key] = clone(source[key] as Json);
  };
  if (subresource !== "status") {
    keep(pod, old, "status");
    return;
  }
  keep(pod, old, "spec");
  keep(meta(pod), meta(old), "ownerReferences");
  delete meta(pod).deletionTimestamp;
  const status = obj(pod, "status");
  const oldQos = obj(old, "status")?.qosClass;
  if (status !== undefined && status.qosClass === undefined && oldQos !== undefined) status.qosClass = oldQos;
}

function deletionGracePeriod(pod: KubeObject, requested: number | undefined): number {
  const spec = obj(pod, "spec");
  const configured = spec?.terminationGracePeriodSeconds;
  let period = requested ?? (typeof configured === "number" ? configured : 30);
  if (str(spec, "nodeName") === "") period = 0;
  const phase = str(obj(pod, "status"), "phase");
  if (phase === "Succeeded" || phase === "Failed") period = 0;
  return period < 0 ? 1 : period;
}

const specField = (key: string) => (pod: KubeObject) => str(obj(pod, "spec"), key);
const statusField = (key: string) => (pod: KubeObject) => str(obj(pod, "status"), key);

const FIELDS = {
  ...METADATA_FIELDS,
  "spec.nodeName": specField("nodeName"),
  "spec.restartPolicy": specField("restartPolicy"),
  "spec.schedulerName": specField("schedulerName"),
  "spec.serviceAccountName": specField("serviceAccountName"),
  "spec.hostNetwork": (pod: KubeObject) => String(obj(pod, "spec")?.hostNetwork === true),
  "status.phase": statusField("phase"),
  "status.podIP": statusField("podIP"),
  "status.nominatedNodeName": statusField("nominatedNodeName"),
};

export const PODS: KindSpec = {
  group: "",
  version: "v1",
  apiVersion: "v1",
  kind: "Pod",
  listKind: "PodList",
  plural: "pods",
  singular: "pod",
  namespaced: true,
  shortNames: ["po"],
  subresources: ["status"],
  fieldSelectors: Object.keys(FIELDS),
  builtIn: true,
  schema: POD,
  tracksGeneration: true,
  allowCreateOnUpdate: false,
  allowUnconditionalUpdate: true,
  strategicMergePatch: true,
  fields: FIELDS,
  generationContent: (pod) => pod.spec,
  defaults,
  prepareForCreate(pod) {
    pod.status = { phase: "Pending", qosClass: qosClass(obj(pod, "spec")) };
  },
  prepareForUpdate,
  validate,
  validateUpdate,
  returnDeletedObject: true,
  deletionGracePeriod,
};
