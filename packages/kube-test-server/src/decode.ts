import { ApiError, badRequest, invalid as invalidError, invalidValue } from "./errors.js";
import { clone, isObject, type Json, type KubeObject, meta } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { rfc3339 } from "./microtime.js";
import { decodeTyped, prune } from "./schema.js";

export interface DecodeOptions {
  kind: KindSpec;
  /** The request's namespace. */
  namespace: string;
  /** The `fieldValidation` query parameter: Strict, Warn (default) or Ignore. */
  fieldValidation: string | null;
  /** Decoding a patch's result: decode errors are 422 on the `patch` field, as the API server reports them. */
  fromPatch: boolean;
}

export interface Decoded {
  object: KubeObject;
  /** `Warning` header texts for dropped unknown fields. */
  warnings: string[];
}

export function parseBody(body: string, kind: KindSpec): Json {
  try {
    return JSON.parse(body) as Json;
  } catch (error) {
    const message = (error as Error).message;
    throw badRequest(
      kind.builtIn
        ? `${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${message}`
        : `the object provided is unrecognized (must be of type ${kind.kind}): couldn't get version/kind; json parse error: ${message}`,
    );
  }
}

const preview = (value: Json) => {
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
};

function checkTypeMeta(object: KubeObject, kind: KindSpec): void {
  const { apiVersion, kind: k } = object;
  if (apiVersion !== undefined && typeof apiVersion !== "string")
    throw badRequest(`apiVersion must be a string, got ${preview(apiVersion)}`);
  if (k !== undefined && typeof k !== "string") throw badRequest(`kind must be a string, got ${preview(k)}`);
  if (kind.builtIn) {
    if ((apiVersion ?? kind.apiVersion) !== kind.apiVersion || (k ?? kind.kind) !== kind.kind)
      throw badRequest(
        `${k ?? ""} in version "${apiVersion ?? ""}" cannot be handled as a ${kind.kind}: this endpoint serves ${kind.kind} in version "${kind.apiVersion}"`,
      );
    return;
  }
  if (k === undefined || k === "") throw badRequest(`Object 'Kind' is missing in '${preview(object)}'`);
  if (apiVersion !== kind.apiVersion)
    throw badRequest(`the API version in the data (${apiVersion ?? ""}) does not match the expected API version (${kind.apiVersion})`);
  if (k !== kind.kind) {
    const name = isObject(object.metadata) && typeof object.metadata.name === "string" ? object.metadata.name : "";
    throw invalidError(kind.group, k, name, [invalidValue("kind", k, `must be ${kind.kind}`)]);
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function checkMetadataTypes(object: KubeObject, kind: KindSpec): void {
  const m = object.metadata;
  if (m === undefined) return;
  if (!isObject(m)) throw badRequest(`${kind.kind}: metadata must be an object, got ${preview(m)}`);
  for (const key of ["name", "generateName", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"])
    if (m[key] !== undefined && m[key] !== null && typeof m[key] !== "string")
      throw badRequest(`${kind.kind}: metadata.${key} must be a string, got ${preview(m[key] as Json)}`);
  for (const key of ["name", "generateName", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"])
    if (m[key] === null) delete m[key];
  // metav1.Time: RFC 3339, re-serialised in UTC with whole seconds (so a client's ".000Z" round-trips).
  for (const key of ["creationTimestamp", "deletionTimestamp"]) {
    const value = m[key];
    if (typeof value !== "string") continue;
    if (!RFC3339.test(value) || Number.isNaN(Date.parse(value)))
      throw badRequest(`${kind.kind}: metadata.${key}: parsing time ${JSON.stringify(value)} as RFC 3339 failed`);
    m[key] = rfc3339(new Date(value));
  }
}

function decodeStrict(value: Json, options: DecodeOptions): Decoded {
  const { kind } = options;
  if (!isObject(value)) throw badRequest(`the object provided is unrecognized (must be of type ${kind.kind}): ${preview(value)}`);
  const object = clone(value);
  checkTypeMeta(object, kind);
  object.apiVersion = kind.apiVersion;
  object.kind = kind.kind;
  checkMetadataTypes(object, kind);
  meta(object);
  const dropped = prune(object, kind.schema)
    .sort()
    .map((path) => `unknown field "${path}"`);
  const mode = options.fieldValidation ?? "Warn";
  if (!["Strict", "Warn", "Ignore"].includes(mode))
    throw badRequest(`fieldValidation: Unsupported value: "${mode}": supported values: "Ignore", "Strict", "Warn"`);
  if (mode === "Strict" && dropped.length > 0) throw badRequest(`strict decoding error: ${dropped.join(", ")}`);
  if (kind.builtIn) {
    const error = decodeTyped(object, kind.schema);
    if (error !== undefined) throw badRequest(`${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${error}`);
  }
  kind.defaults?.(object);
  return { object, warnings: mode === "Warn" ? dropped : [] };
}

/**
 * A request body (or a patch's result) as the API server decodes it: apiVersion/kind checked
 * against the endpoint, unknown fields pruned (with warnings, or refused under
 * fieldValidation=Strict), built-in kinds decoded (MicroTimes) and defaulted, and the namespace
 * matched against the request's.
 */
export function decodeObject(value: Json, options: DecodeOptions): Decoded {
  let decoded: Decoded;
  try {
    decoded = decodeStrict(value, options);
  } catch (error) {
    if (!(options.fromPatch && error instanceof ApiError && error.code === 400)) throw error;
    throw invalidError("", "", "", [invalidValue("patch", preview(value), error.message)]);
  }
  const m = meta(decoded.object);
  const namespace = m.namespace;
  if (typeof namespace === "string" && namespace !== "" && namespace !== options.namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  m.namespace = options.namespace;
  return decoded;
}
