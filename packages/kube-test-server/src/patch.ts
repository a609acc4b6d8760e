import jsonpatch from "fast-json-patch";
import { badRequest, entityTooLarge, genericInvalid, unsupportedMediaType } from "./errors.js";
import { clone, isObject, type Json, type JsonObject, type KubeObject } from "./json.js";
import type { KindSpec } from "./kinds.js";

export const JSON_PATCH = "application/json-patch+json";
export const MERGE_PATCH = "application/merge-patch+json";
export const STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";
export const APPLY_PATCH = "application/apply-patch+yaml";

/** kube-apiserver's cap on operations in one JSON patch. */
const MAX_JSON_PATCH_OPERATIONS = 10_000;

function accepted(kind: KindSpec): string[] {
  return [JSON_PATCH, MERGE_PATCH, APPLY_PATCH, ...(kind.strategicMergePatch ? [STRATEGIC_MERGE_PATCH] : [])];
}

function parse(body: string): Json {
  try {
    return JSON.parse(body) as Json;
  } catch (error) {
    throw badRequest(`error decoding patch: ${(error as Error).message}`);
  }
}

/** RFC 7386. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function hasListsOrDirectives(value: Json): boolean {
  if (Array.isArray(value)) return true;
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, child]) => key.startsWith("$") || hasListsOrDirectives(child));
}

/**
 * Applies a PATCH body to the current object as the API server does for its content type:
 * JSON patch (RFC 6902; a failed operation, `test` included, is a bare 422), JSON merge patch,
 * and strategic merge patch for built-in kinds only when it is a plain map merge (no lists, no
 * `$` directives) — which is then exactly a merge patch. Server-side apply is not supported.
 */
export function applyPatch(current: KubeObject, body: string, contentType: string, kind: KindSpec): Json {
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === JSON_PATCH) {
    const operations = parse(body);
    if (!Array.isArray(operations) || !operations.every(isObject))
      throw badRequest("json: cannot unmarshal the patch into Go value of type jsonpatch.Patch");
    if (operations.length > MAX_JSON_PATCH_OPERATIONS)
      throw entityTooLarge(`The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${operations.length}`);
    try {
      return jsonpatch.applyPatch(clone(current), operations as unknown as jsonpatch.Operation[], true, true).newDocument as Json;
    } catch {
      throw genericInvalid();
    }
  }
  if (type === MERGE_PATCH) {
    const patch = parse(body);
    if (!isObject(patch)) throw badRequest("Invalid JSON Patch");
    return mergePatch(current, patch);
  }
  if (type === STRATEGIC_MERGE_PATCH && kind.strategicMergePatch) {
    const patch = parse(body);
    if (!isObject(patch)) throw badRequest("Invalid JSON Patch");
    if (hasListsOrDirectives(patch))
      throw unsupportedMediaType(
        accepted(kind),
        "kube-test-server applies a strategic merge patch only when it has no lists and no $-directives",
      );
    return mergePatch(current, patch);
  }
  if (type === APPLY_PATCH) throw unsupportedMediaType(accepted(kind), "kube-test-server does not implement server-side apply");
  throw unsupportedMediaType(accepted(kind).filter((t) => kind.strategicMergePatch || t !== STRATEGIC_MERGE_PATCH));
}
