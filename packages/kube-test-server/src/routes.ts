import { apiGroup, apiGroupList, apiVersions, resourceList, VERSION_INFO } from "./discovery.js";
import { pathNotFound } from "./errors.js";
import type { JsonObject } from "./json.js";
import { findKind, type KindSpec } from "./kinds.js";

export type Route =
  /** `namespace` undefined: across all namespaces. */
  | { readonly type: "collection"; readonly kind: KindSpec; readonly namespace: string | undefined }
  | {
      readonly type: "object";
      readonly kind: KindSpec;
      readonly namespace: string;
      readonly name: string;
      readonly subresource: string | undefined;
    }
  | { readonly type: "document"; readonly body: JsonObject }
  | { readonly type: "health" };

const document = (body: JsonObject | undefined): Route => {
  if (body === undefined) throw pathNotFound();
  return { type: "document", body };
};

function resourceRoute(group: string, version: string, tail: readonly string[]): Route {
  if (tail.length === 0) return document(resourceList(group, version));
  if (tail.length === 1) {
    const kind = findKind(group, version, tail[0] ?? "");
    if (kind !== undefined) return { type: "collection", kind, namespace: undefined };
  }
  const [namespaces, namespace, plural, name, subresource, ...extra] = tail;
  const kind = findKind(group, version, plural ?? "");
  if (namespaces !== "namespaces" || namespace === undefined || kind === undefined || extra.length > 0) throw pathNotFound();
  if (name === undefined) return { type: "collection", kind, namespace };
  if (subresource !== undefined && !kind.subresources.includes(subresource)) throw pathNotFound();
  return { type: "object", kind, namespace, name, subresource };
}

/** What a URL path names; anything else is a 404 Status. */
export function route(pathname: string, serverAddress: string): Route {
  let segments: string[];
  try {
    segments = pathname
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s));
  } catch {
    throw pathNotFound();
  }
  const [root, ...rest] = segments;
  if (rest.length === 0 && (root === "healthz" || root === "livez" || root === "readyz")) return { type: "health" };
  if (rest.length === 0 && root === "version") return document(VERSION_INFO);
  if (root === "api") {
    if (rest.length === 0) return document(apiVersions(serverAddress));
    const [version, ...tail] = rest;
    if (version !== "v1") throw pathNotFound();
    return resourceRoute("", version, tail);
  }
  if (root === "apis") {
    if (rest.length === 0) return document(apiGroupList());
    const [group = "", version, ...tail] = rest;
    if (version === undefined) return document(apiGroup(group));
    return resourceRoute(group, version, tail);
  }
  throw pathNotFound();
}
