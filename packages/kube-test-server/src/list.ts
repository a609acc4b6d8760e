import { badRequest, expired, timeout } from "./errors.js";
import { type JsonObject, type KubeObject, meta, str } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { type ObjectStore, objectKey } from "./store.js";

/** The label and field selectors of a LIST or WATCH (plus the namespace and, for single-object watches, the name). */
export interface Selection {
  readonly matches: (object: KubeObject) => boolean;
  /** Whether any selector was given (then remainingItemCount is not known). */
  readonly filtered: boolean;
}

export function selection(kind: KindSpec, namespace: string | undefined, query: URLSearchParams, name?: string): Selection {
  const labels = parseLabelSelector(query.get("labelSelector") ?? "");
  const fields = parseFieldSelector(query.get("fieldSelector") ?? "", kind.fieldSelectors);
  return {
    filtered: labels.length > 0 || fields.length > 0,
    matches: (object) => {
      const m = meta(object);
      if (namespace !== undefined && str(m, "namespace") !== namespace) return false;
      if (name !== undefined && str(m, "name") !== name) return false;
      return matchesLabels(labels, m.labels) && matchesFields(fields, (field) => kind.fields[field]?.(object) ?? "");
    },
  };
}

export function parseResourceVersion(text: string): number {
  if (!/^\d+$/.test(text)) throw badRequest(`invalid resource version ${JSON.stringify(text)}`);
  return Number(text);
}

/** A resourceVersion newer than the server's: what the watch cache answers after waiting for it in vain. */
export function tooLargeResourceVersion(requested: number, current: number) {
  return timeout(`Too large resource version: ${requested}, current: ${current}`, [
    { reason: "ResourceVersionTooLarge", message: "Too large resource version" },
  ]);
}

interface ContinueToken {
  v: "meta.k8s.io/v1";
  /** The snapshot's resourceVersion; -1 continues from the latest state. */
  rv: number;
  /** The last key returned. */
  start: string;
}

const encodeToken = (token: ContinueToken) => Buffer.from(JSON.stringify(token)).toString("base64url");

function decodeToken(text: string): ContinueToken {
  try {
    const token = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Partial<ContinueToken>;
    if (token.v === "meta.k8s.io/v1" && typeof token.rv === "number" && Number.isInteger(token.rv) && typeof token.start === "string")
      return token as ContinueToken;
  } catch {
    // reported below
  }
  throw badRequest(`continue key is not valid: ${JSON.stringify(text)}`);
}

const CONTINUE_EXPIRED =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

function parseLimit(text: string | null): number {
  if (text === null || text === "") return 0;
  if (!/^\d+$/.test(text)) throw badRequest(`limit: Invalid value: ${JSON.stringify(text)}: must be a non-negative integer`);
  return Number(text);
}

/** The snapshot a LIST reads: resourceVersion/resourceVersionMatch/continue semantics of the API server. */
function snapshot(store: ObjectStore, query: URLSearchParams): { rv: number; start: string; token?: ContinueToken } {
  const rv = query.get("resourceVersion") ?? "";
  const match = query.get("resourceVersionMatch") ?? "";
  const cont = query.get("continue") ?? "";
  if (match !== "" && match !== "NotOlderThan" && match !== "Exact")
    throw badRequest(`resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`);
  if (match !== "" && rv === "") throw badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided");
  if (match !== "" && cont !== "") throw badRequest("resourceVersionMatch is forbidden when continue is provided");
  if (match === "Exact" && rv === "0") throw badRequest('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  if (cont !== "") {
    if (rv !== "" && rv !== "0") throw badRequest("specifying resource version is not allowed when using continue");
    const token = decodeToken(cont);
    return { rv: token.rv === -1 ? store.resourceVersion : token.rv, start: token.start, token };
  }
  if (rv === "" || rv === "0") return { rv: store.resourceVersion, start: "" };
  const requested = parseResourceVersion(rv);
  if (requested > store.resourceVersion) throw tooLargeResourceVersion(requested, store.resourceVersion);
  return { rv: match === "Exact" ? requested : store.resourceVersion, start: "" };
}

/** LIST: a `<Kind>List` of the selected objects in key order, `limit`/`continue` pages over one consistent snapshot. */
export function listObjects(store: ObjectStore, kind: KindSpec, namespace: string | undefined, query: URLSearchParams): JsonObject {
  const select = selection(kind, namespace, query);
  const limit = parseLimit(query.get("limit"));
  const { rv, start, token } = snapshot(store, query);
  const after = store.list(kind.plural, namespace, rv, start);
  if (after === undefined) {
    if (token !== undefined) throw expired(CONTINUE_EXPIRED, encodeToken({ v: "meta.k8s.io/v1", rv: -1, start }));
    throw expired(`too old resource version: ${rv} (${store.compactedThrough})`);
  }
  // the store answered this namespace's objects after `start`: only selectors are left to apply
  const matching = select.filtered ? after.filter((o) => select.matches(o)) : after;
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const last = page[page.length - 1];
  const more = limit > 0 && matching.length > limit && last !== undefined;
  const metadata: JsonObject = { resourceVersion: String(rv) };
  // a custom resource list (unstructured) always carries continue, "" on the last page; typed lists omit it
  if (!kind.builtIn) metadata.continue = "";
  if (more) {
    metadata.continue = encodeToken({ v: "meta.k8s.io/v1", rv, start: objectKey(last) });
    if (!select.filtered) metadata.remainingItemCount = matching.length - page.length;
  }
  // Built-in lists are typed: their items carry no apiVersion/kind. Custom resource items do.
  const items = page.map((o) => {
    if (!kind.builtIn) return o;
    const { apiVersion: _apiVersion, kind: _kind, ...rest } = o;
    return rest;
  });
  return { apiVersion: kind.apiVersion, kind: kind.listKind, metadata, items };
}
