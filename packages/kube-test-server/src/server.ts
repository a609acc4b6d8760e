import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseBody } from "./decode.js";
import { deleteObject, deleteOptions } from "./delete.js";
import { ApiError, badRequest, fromFault, methodNotAllowed, plainError, unauthorized, unsupportedMediaType } from "./errors.js";
import { readBody, sendJson, sendText } from "./http.js";
import type { Json } from "./json.js";
import type { KindSpec } from "./kinds.js";
import { kubeconfigText } from "./kubeconfig.js";
import { listObjects, parseResourceVersion, tooLargeResourceVersion } from "./list.js";
import { createObject, getObject, patchObject, type Registry, replaceObject } from "./objects.js";
import { type Route, route } from "./routes.js";
import type { Fault, KubeTestServer, KubeTestServerOptions, KubeTestServerStats } from "./server-types.js";
import { ObjectStore } from "./store.js";
import { type ActiveWatch, startWatch } from "./watch.js";

/** etcd's default request limit (--max-request-bytes), 1.5 MiB. */
export const DEFAULT_MAX_OBJECT_BYTES = 1_572_864;

/** The history also stops at this many bytes of objects, so big objects cannot pile up in memory. */
const HISTORY_BYTES = 64 * 1024 * 1024;

export type { Fault, KubeTestServer, KubeTestServerOptions, KubeTestServerStats } from "./server-types.js";

const isWatch = (query: URLSearchParams) => query.get("watch") === "true" || query.get("watch") === "1";

function verbOf(method: string, target: Route, query: URLSearchParams): string {
  if (target.type === "document" || target.type === "health") return "discovery";
  const verbs: Record<string, string> = { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" };
  if (method === "GET") return target.type === "collection" ? (isWatch(query) ? "watch" : "list") : "get";
  return verbs[method] ?? "other";
}

/** `ippools`, `pods/status`: the resource a request addressed, for the counters. */
function resourceOf(target: Route | ApiError | undefined): string | undefined {
  if (target === undefined || target instanceof ApiError) return undefined;
  if (target.type === "collection") return target.kind.plural;
  if (target.type === "object")
    return target.subresource === undefined ? target.kind.plural : `${target.kind.plural}/${target.subresource}`;
  return undefined;
}

function contentType(request: IncomingMessage): string {
  return (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

async function jsonBody(request: IncomingMessage, kind: KindSpec): Promise<Json> {
  const type = contentType(request);
  if (type !== "" && type !== "application/json")
    throw unsupportedMediaType(
      ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
      "kube-test-server reads JSON only",
    );
  return parseBody(await readBody(request), kind);
}

/** What the request handlers share: the store, open watches, pending faults, counters, the bound address. */
interface ServerContext {
  readonly store: ObjectStore;
  readonly registry: Registry;
  readonly bookmarkIntervalMs: number;
  readonly token: string | undefined;
  readonly watches: Set<ActiveWatch>;
  readonly faults: (Fault & { times: number })[];
  readonly stats: KubeTestServerStats;
  /** `127.0.0.1:<port>`, set once listening. */
  address: string;
}

function count(ctx: ServerContext, verb: string, code: number, target?: Route | ApiError): void {
  const { stats } = ctx;
  stats.requests += 1;
  stats.byStatus[code] = (stats.byStatus[code] ?? 0) + 1;
  stats.byVerb[verb] = (stats.byVerb[verb] ?? 0) + 1;
  const resource = resourceOf(target);
  const key = resource === undefined ? verb : `${verb} ${resource}`;
  stats.byResource[key] = (stats.byResource[key] ?? 0) + 1;
}

function takeFault(ctx: ServerContext, method: string, path: string): ApiError | undefined {
  const { faults } = ctx;
  const index = faults.findIndex(
    (f) => (f.method === undefined || f.method.toUpperCase() === method) && path.startsWith(f.pathPrefix ?? ""),
  );
  const fault = faults[index];
  if (fault === undefined) return undefined;
  fault.times -= 1;
  if (fault.times <= 0) faults.splice(index, 1);
  return fromFault(fault.status, fault.reason, fault.message);
}

type CollectionRoute = Extract<Route, { type: "collection" }>;
type ObjectRoute = Extract<Route, { type: "object" }>;

function serveWatch(ctx: ServerContext, response: ServerResponse, target: CollectionRoute, query: URLSearchParams): number {
  const watch = startWatch({
    store: ctx.store,
    kind: target.kind,
    namespace: target.namespace,
    query,
    response,
    bookmarkIntervalMs: ctx.bookmarkIntervalMs,
  });
  ctx.watches.add(watch);
  response.on("close", () => ctx.watches.delete(watch));
  return 200;
}

async function serveCollection(
  ctx: ServerContext,
  request: IncomingMessage,
  response: ServerResponse,
  target: CollectionRoute,
  query: URLSearchParams,
): Promise<number> {
  const method = request.method ?? "GET";
  if (method === "GET") {
    sendJson(response, 200, listObjects(ctx.store, target.kind, target.namespace, query));
    return 200;
  }
  if (method !== "POST" || target.namespace === undefined) throw methodNotAllowed();
  const fieldValidation = query.get("fieldValidation");
  const written = createObject(ctx.registry, target.kind, target.namespace, await jsonBody(request, target.kind), { fieldValidation });
  sendJson(response, written.code, written.object, written.warnings);
  return written.code;
}

async function serveObject(
  ctx: ServerContext,
  request: IncomingMessage,
  response: ServerResponse,
  target: ObjectRoute,
  query: URLSearchParams,
): Promise<number> {
  const { store, registry } = ctx;
  const method = request.method ?? "GET";
  const fieldValidation = query.get("fieldValidation");
  if (method === "GET") {
    const rv = query.get("resourceVersion") ?? "";
    if (rv !== "" && rv !== "0" && parseResourceVersion(rv) > store.resourceVersion)
      throw tooLargeResourceVersion(parseResourceVersion(rv), store.resourceVersion);
    sendJson(response, 200, getObject(registry, target));
    return 200;
  }
  let written: { code: number; object: unknown; warnings: readonly string[] };
  if (method === "PUT") written = replaceObject(registry, target, await jsonBody(request, target.kind), { fieldValidation });
  else if (method === "PATCH")
    written = patchObject(registry, target, await readBody(request), request.headers["content-type"] ?? "", { fieldValidation });
  else if (method === "DELETE" && target.subresource === undefined) {
    const text = await readBody(request);
    written = deleteObject(registry, target, deleteOptions(query, text.trim() === "" ? undefined : parseBody(text, target.kind)));
  } else throw methodNotAllowed();
  sendJson(response, written.code, written.object, written.warnings);
  return written.code;
}

async function serve(
  ctx: ServerContext,
  request: IncomingMessage,
  response: ServerResponse,
  target: Route,
  query: URLSearchParams,
): Promise<number> {
  const method = request.method ?? "GET";
  if (target.type === "health" || target.type === "document") {
    if (method !== "GET") throw methodNotAllowed();
    if (target.type === "health") sendText(response, 200, "ok");
    else sendJson(response, 200, target.body);
    return 200;
  }
  if (method !== "GET" && query.has("dryRun")) throw badRequest("dryRun is not supported by kube-test-server");
  // `watch` is a list option: on an object's URL kube-apiserver ignores it and answers the object
  if (method === "GET" && isWatch(query) && target.type === "collection") return serveWatch(ctx, response, target, query);
  if (target.type === "collection") return serveCollection(ctx, request, response, target, query);
  return serveObject(ctx, request, response, target, query);
}

async function handle(ctx: ServerContext, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const method = request.method ?? "GET";
  let verb = "other";
  let target: Route | ApiError | undefined;
  try {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (ctx.token !== undefined && request.headers.authorization !== `Bearer ${ctx.token}`) throw unauthorized();
    try {
      target = route(url.pathname, ctx.address);
      verb = verbOf(method, target, url.searchParams);
    } catch (error) {
      target = error instanceof ApiError ? error : plainError(String(error));
    }
    const fault = takeFault(ctx, method, url.pathname);
    if (fault !== undefined) throw fault;
    if (target instanceof ApiError) throw target;
    count(ctx, verb, await serve(ctx, request, response, target, url.searchParams), target);
  } catch (error) {
    const failure =
      error instanceof ApiError ? error : plainError(`kube-test-server: ${error instanceof Error ? error.message : String(error)}`);
    count(ctx, verb, failure.code, target);
    if (response.headersSent) response.destroy();
    else sendJson(response, failure.code, failure.status);
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

export async function startKubeTestServer(options: KubeTestServerOptions = {}): Promise<KubeTestServer> {
  const host = options.host ?? "127.0.0.1";
  if (host !== "127.0.0.1") throw new Error(`kube-test-server listens on 127.0.0.1 only, not ${host}`);
  const store = new ObjectStore({ historyEvents: options.historyEvents ?? 1000, historyBytes: HISTORY_BYTES });
  const ctx: ServerContext = {
    store,
    registry: { store, maxObjectBytes: options.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES, now: () => new Date() },
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 1000,
    token: options.token,
    watches: new Set<ActiveWatch>(),
    faults: [],
    stats: { requests: 0, byStatus: {}, byVerb: {}, byResource: {} },
    address: "",
  };

  const server = createServer((request, response) => {
    void handle(ctx, request, response);
  });
  await listen(server, options.port ?? 0, host);
  const { port } = server.address() as AddressInfo;
  ctx.address = `${host}:${port}`;
  const url = `http://${ctx.address}`;

  return {
    url,
    kubeconfig: (kubeconfigOptions) => kubeconfigText(url, options.token, kubeconfigOptions),
    writeKubeconfig: (path, kubeconfigOptions) => writeFile(path, kubeconfigText(url, options.token, kubeconfigOptions), { mode: 0o600 }),
    stats: () => structuredClone(ctx.stats),
    failNext(fault) {
      ctx.faults.push({ ...fault, times: fault.times ?? 1 });
    },
    close() {
      for (const watch of ctx.watches) watch.close();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
