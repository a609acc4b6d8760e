import { ApiException, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from "@kubernetes/client-node";
import type { Status } from "./errors.js";
import { type KubeTestServer, type KubeTestServerOptions, startKubeTestServer } from "./server.js";

// Shared by the tests (not part of the build): a server plus the real @kubernetes/client-node
// clients pointed at it through the server's own kubeconfig.

export const GROUP = "whereabouts.cni.cncf.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const NS = "ipam";

export interface Harness {
  server: KubeTestServer;
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  watch: Watch;
}

export async function startHarness(options: KubeTestServerOptions = {}): Promise<Harness> {
  const server = await startKubeTestServer(options);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig({ namespace: NS }));
  return {
    server,
    kubeConfig,
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    core: kubeConfig.makeApiClient(CoreV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    watch: new Watch(kubeConfig),
  };
}

/** Custom-object request parameters for a Whereabouts plural. */
export const cr = (plural: string, namespace = NS) => ({ group: GROUP, version: VERSION, namespace, plural });
export const ippools = (namespace = NS) => cr("ippools", namespace);

/** A CR body as client code would send it. */
export type Body = Record<string, unknown> & { metadata?: Record<string, unknown> };

export function ippool(name: string, extra: Body = {}): Body {
  return {
    apiVersion: API_VERSION,
    kind: "IPPool",
    metadata: { name, ...(extra.metadata ?? {}) },
    spec: { range: "10.0.0.0/24", allocations: {} },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== "metadata")),
  };
}

export function pod(name: string, extra: Body = {}): Body {
  return {
    metadata: { name, ...(extra.metadata ?? {}) },
    spec: { containers: [{ name: "app", image: "registry.example/app:1.0" }], ...((extra.spec as object | undefined) ?? {}) },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== "metadata" && k !== "spec")),
  };
}

/** The failed request's HTTP code and its Status body (parsed from ApiException.body). */
export async function failure(request: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body = error.body as unknown;
    return { code: error.code, status: (typeof body === "string" && body !== "" ? JSON.parse(body) : body) as Status };
  }
  throw new Error("the request succeeded; it was expected to fail");
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** A request client-node cannot express. */
export async function raw(
  server: KubeTestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export const metadataOf = (object: unknown) => (object as { metadata: Record<string, unknown> }).metadata;
export const rvOf = (object: unknown) => String(metadataOf(object).resourceVersion);

export interface CollectedWatch {
  events: { type: string; object: Record<string, unknown> }[];
  /** Resolves once `predicate` holds for the events seen so far. */
  until(predicate: (events: CollectedWatch["events"]) => boolean): Promise<void>;
  /** Resolves when the watch ends (client-node's `done`), with its error if any. */
  done: Promise<unknown>;
  abort(): void;
}

export async function collect(watch: Watch, path: string, query: Record<string, string | number | boolean>): Promise<CollectedWatch> {
  const events: CollectedWatch["events"] = [];
  const waiters: { predicate: (e: CollectedWatch["events"]) => boolean; resolve: () => void }[] = [];
  const check = () => {
    for (const w of [...waiters])
      if (w.predicate(events)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  };
  let finished: (error: unknown) => void = () => {};
  const done = new Promise<unknown>((resolve) => {
    finished = resolve;
  });
  const controller = await watch.watch(
    path,
    query,
    (type, object) => {
      events.push({ type, object: object as Record<string, unknown> });
      check();
    },
    (error) => finished(error),
  );
  return {
    events,
    until: (predicate) =>
      new Promise<void>((resolve) => {
        waiters.push({ predicate, resolve });
        check();
      }),
    done,
    abort: () => controller.abort(),
  };
}
