import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { binaryPaths, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { ApiException, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from "@kubernetes/client-node";
import type { Status } from "./errors.js";
import { type KubeTestServer, type KubeTestServerOptions, startKubeTestServer } from "./server.js";

// Shared by the tests (not part of the build): a server — the stand-in or a real kube-apiserver —
// plus the real @kubernetes/client-node clients pointed at it through its own kubeconfig.

export const GROUP = "whereabouts.cni.cncf.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const NS = "ipam";

export interface Harness {
  /** The stand-in (fault injection, stats); undefined on a real kube-apiserver. */
  server: KubeTestServer | undefined;
  /** `http://127.0.0.1:<port>` (stand-in) or `https://127.0.0.1:<port>` (real). */
  url: string;
  /** The CA and token a raw request needs on a real server. */
  ca?: string;
  token?: string;
  kubeConfig: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  watch: Watch;
  close(): Promise<void>;
}

function clients(kubeConfig: KubeConfig) {
  return {
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    core: kubeConfig.makeApiClient(CoreV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    watch: new Watch(kubeConfig),
  };
}

export async function startHarness(options: KubeTestServerOptions = {}): Promise<Harness> {
  const server = await startKubeTestServer(options);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig({ namespace: NS }));
  return { server, url: server.url, kubeConfig, ...clients(kubeConfig), close: () => server.close() };
}

/**
 * The namespaces the suites write to. On the stand-in every namespace exists; a real server needs
 * them created (NamespaceLifecycle admission; pod admission looks the namespace up).
 */
export const TEST_NAMESPACES = [NS, "other", "elsewhere", "fields", "sel", "typed", "churn", "fresh-namespace"].concat(
  ["bookmark", "close", "item", "label", "ns-a", "ns-b", "old", "rv", "timeout", "zero"].map((n) => `w-${n}`),
);

/** A real kube-apiserver v1.37 on etcd (@ipamkit/kube-apiserver-launcher) with the project's CRDs. */
export async function startRealHarness(): Promise<Harness> {
  const server = await startKubeApiserver({ namespace: NS, namespaces: TEST_NAMESPACES });
  return {
    server: undefined,
    url: server.url,
    ca: server.ca,
    token: server.token,
    kubeConfig: server.kubeConfig,
    ...clients(server.kubeConfig),
    close: () => server.stop(),
  };
}

export interface HarnessTarget {
  readonly name: string;
  /** The stand-in only: fault injection, stats and its own options. */
  readonly standIn: boolean;
  start(): Promise<Harness>;
}

/** The stand-in and a real kube-apiserver: the same tests pin the same behaviour on both. */
export function harnessTargets(options: KubeTestServerOptions = {}): HarnessTarget[] {
  return [
    { name: "kube-test-server", standIn: true, start: () => startHarness(options) },
    { name: `kube-apiserver ${binaryPaths().kubernetesVersion}`, standIn: false, start: startRealHarness },
  ];
}

/** The stand-in behind `h`; throws on a real kube-apiserver. */
export function standIn(h: Harness): KubeTestServer {
  if (h.server === undefined) throw new Error("this needs the kube-test-server target");
  return h.server;
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
  /** Parsed JSON, or the text when it is none. */
  body: unknown;
  text: string;
}

/** A request client-node cannot express (to a harness, or to a stand-in by its url). */
export async function raw(
  target: Pick<Harness, "url" | "ca" | "token"> | KubeTestServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const { url } = target;
  const { ca, token } = "ca" in target ? target : { ca: undefined, token: undefined };
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const response = await new Promise<{ status: number; headers: Headers; text: string }>((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    const req = send(
      `${url}${path}`,
      {
        method,
        ...(ca === undefined ? {} : { ca }),
        headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) h.append(k, one);
          resolve({ status: res.statusCode ?? 0, headers: h, text });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
  const text = response.text;
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
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
