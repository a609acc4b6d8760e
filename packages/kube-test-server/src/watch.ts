import type { ServerResponse } from "node:http";
import { badRequest, expired, type Status } from "./errors.js";
import { clone, type JsonObject, type KubeObject, meta } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { parseResourceVersion, selection } from "./list.js";
import type { ObjectStore, StoreEvent } from "./store.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent {
  type: WatchEventType;
  object: KubeObject | Status;
}

export interface WatchRequest {
  readonly store: ObjectStore;
  readonly kind: KindSpec;
  readonly namespace: string | undefined;
  readonly query: URLSearchParams;
  readonly response: ServerResponse;
  readonly bookmarkIntervalMs: number;
}

export interface ActiveWatch {
  close(): void;
}

/**
 * Converts a write into what one watcher sees, as the watch cache does: an object entering the
 * selection is ADDED, leaving it is DELETED (the previous state at the new resourceVersion).
 */
function visible(event: StoreEvent, kind: KindSpec, matches: (o: KubeObject) => boolean): WatchEvent | undefined {
  if (event.plural !== kind.plural) return undefined;
  const now = event.type !== "DELETED" && matches(event.object);
  const before = event.previous !== undefined && matches(event.previous);
  if (now) return { type: before ? "MODIFIED" : "ADDED", object: event.object };
  if (!before || event.previous === undefined) return undefined;
  const object = event.type === "DELETED" ? event.object : clone(event.previous);
  meta(object).resourceVersion = String(event.rv);
  return { type: "DELETED", object };
}

/**
 * WATCH: newline-delimited JSON events. resourceVersion ""/"0" starts with synthetic ADDED events
 * for the current objects; N replays the writes after N (or, when they are compacted away, one
 * ERROR event with a 410 Expired Status). Bookmarks on request (after the synthetic ADDED events, one
 * marked `k8s.io/initial-events-end`); ends after timeoutSeconds.
 * Argument errors are thrown (the caller answers them) before anything is written.
 */
export function startWatch(request: WatchRequest): ActiveWatch {
  const { store, kind, query, response } = request;
  const select = selection(kind, request.namespace, query);
  if ((query.get("resourceVersionMatch") ?? "") !== "") throw badRequest("resourceVersionMatch is forbidden for watch");
  if (query.get("sendInitialEvents") === "true") throw badRequest("sendInitialEvents is not supported by kube-test-server");
  const timeoutText = query.get("timeoutSeconds");
  if (timeoutText !== null && !/^\d+$/.test(timeoutText)) throw badRequest(`timeoutSeconds: invalid value ${JSON.stringify(timeoutText)}`);
  const rvText = query.get("resourceVersion") ?? "";
  const from = rvText === "" || rvText === "0" ? undefined : parseResourceVersion(rvText);

  response.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
  response.flushHeaders();
  const send = (event: WatchEvent | undefined) => {
    if (event !== undefined && !response.writableEnded) response.write(`${JSON.stringify(event)}\n`);
  };
  let closed = false;
  const timers: NodeJS.Timeout[] = [];
  let unsubscribe = () => {};
  const close = () => {
    if (closed) return;
    closed = true;
    for (const t of timers) clearTimeout(t);
    unsubscribe();
    if (!response.writableEnded) response.end();
  };
  response.on("close", close);

  if (from === undefined) {
    for (const object of store.list(kind.plural, request.namespace) ?? []) if (select.matches(object)) send({ type: "ADDED", object });
  } else {
    const events = store.eventsAfter(from);
    if (events === undefined) {
      send({ type: "ERROR", object: expired(`too old resource version: ${from} (${store.compactedThrough})`).status });
      close();
      return { close };
    }
    for (const event of events) send(visible(event, kind, select.matches));
  }
  unsubscribe = store.subscribe((event) => send(visible(event, kind, select.matches)));
  if (query.get("allowWatchBookmarks") === "true" && from === undefined) {
    // kube-apiserver v1.37 ends the synthetic ADDED events with a bookmark so marked
    const metadata = { annotations: { "k8s.io/initial-events-end": "true" }, resourceVersion: String(store.resourceVersion) };
    send({ type: "BOOKMARK", object: { kind: kind.kind, apiVersion: kind.apiVersion, metadata } });
  }
  if (query.get("allowWatchBookmarks") === "true") {
    const bookmark = () => {
      const object: JsonObject = {
        kind: kind.kind,
        apiVersion: kind.apiVersion,
        metadata: { resourceVersion: String(store.resourceVersion) },
      };
      send({ type: "BOOKMARK", object });
    };
    const interval = setInterval(bookmark, request.bookmarkIntervalMs);
    interval.unref();
    timers.push(interval);
  }
  if (timeoutText !== null && Number(timeoutText) > 0) timers.push(setTimeout(close, Number(timeoutText) * 1000));
  return { close };
}
