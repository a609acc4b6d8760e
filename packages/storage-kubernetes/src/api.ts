import http from "node:http";
import https from "node:https";
import { StoreUnavailableError } from "@ipamkit/core";
import {
  type ConfigurationOptions,
  CustomObjectsApi,
  type KubeConfig,
  Observable,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { apiFailure, mapKubeError, STORE_NAME } from "./errors.js";
import { NodeHttpLibrary } from "./node-http.js";
import { GROUP, type Kind, type KubeObject, VERSION } from "./objects.js";

/**
 * The few custom-object calls the store makes, over `@kubernetes/client-node`. Errors come out
 * as ipamkit errors (errors.ts); a GET of a missing object is `undefined`, not an error.
 */
export interface ObjectApi {
  readonly namespace: string;
  get(kind: Kind, name: string): Promise<KubeObject | undefined>;
  /** Every object of the kind in the namespace, page by page. */
  list(kind: Kind): Promise<KubeObject[]>;
  create(kind: Kind, object: KubeObject): Promise<KubeObject>;
  /** PUT guarded by `object.metadata.resourceVersion`: 409 when stale. */
  replace(kind: Kind, object: KubeObject): Promise<KubeObject>;
  /** DELETE guarded by a resourceVersion precondition: 409 when stale. */
  remove(kind: Kind, name: string, resourceVersion: string): Promise<void>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export interface ObjectApiOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  requestTimeoutMs: number;
  pageSize: number;
}

const resolved = <T>(value: T) => new Observable(Promise.resolve(value));

/** Attempts of one request whose kept-alive connections keep being reset (each reset costs no time). */
export const RESET_ATTEMPTS = 3;

const isReset = (error: unknown): boolean => {
  const e = error as { code?: unknown; message?: unknown };
  return e?.code === "ECONNRESET" || (typeof e?.message === "string" && e.message.includes("ECONNRESET"));
};

/**
 * Runs a request again when the kept-alive connection it went out on had just been closed by the
 * server (ECONNRESET on a reused socket: the API server's idle timeout raced our reuse), up to
 * RESET_ATTEMPTS in all: under load, the next idle connection of the pool may have been closed the
 * same way. Safe for every request the store makes: GETs are idempotent, and a write the server
 * did apply fails its precondition when sent again (409, or 404 for a delete). That refusal cannot
 * tell whether an earlier attempt was applied, so for a write (`write`: what it was) it is
 * reported as StoreUnavailableError with `outcomeUnknown` — never as a conflict, which would tell
 * the caller that nothing was written (core then undoes a claim it created for that write). Core's
 * retry helper finds out which it was by reading again; the runtime never sees it.
 */
export async function retryOnReset<T>(request: () => Promise<T>, options: { write?: string } = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (error) {
      if (isReset(error) && attempt < RESET_ATTEMPTS) continue;
      const { status } = apiFailure(error);
      if (attempt === 1 || options.write === undefined || (status !== 409 && status !== 404)) throw error;
      throw new StoreUnavailableError(
        `${options.write}: the connection was reset and the request sent again was refused as stale (HTTP ${status}); whether the first was applied is unknown`,
        { component: STORE_NAME, cause: error, outcomeUnknown: true },
      );
    }
  }
}

/**
 * How long a kept-alive connection may sit idle before this side closes it. kube-apiserver closes
 * connections idle for 90 s (its http.Server IdleTimeout), load balancers in front of it often
 * after 60 s; a request sent on a connection the server is closing at that moment is reset — and
 * a reset write has an unknown outcome. Retiring idle connections at 30 s, well before either,
 * leaves the server no idle connection to close.
 */
export const KEEP_ALIVE_IDLE_MS = 30_000;

/**
 * How the store's clients send requests (client-node's per-call options): over Node's own HTTP
 * (NodeHttpLibrary, with each request's deadline) and one keep-alive connection pool — client-node
 * builds a new agent for every request (a new TCP connection, and a TLS handshake on https); the
 * first agent's options (CA, client certificate, skip-verify) are copied once into a keep-alive
 * agent of the same kind, which closes a connection idle for `idleMs` (KEEP_ALIVE_IDLE_MS). `close`
 * closes the kept-alive connections.
 */
export function apiTransport(requestTimeoutMs: number, options: { idleMs?: number } = {}): ConfigurationOptions & { close(): void } {
  let shared: http.Agent | undefined;
  const idleMs = options.idleMs ?? KEEP_ALIVE_IDLE_MS;
  const connections: ObservableMiddleware = {
    pre(context: RequestContext) {
      const agent = context.getAgent();
      if (agent !== undefined && (agent.constructor === http.Agent || agent.constructor === https.Agent)) {
        // `timeout`: a kept-alive connection idle that long is closed by us (the agent destroys a
        // free socket on its timeout), before the server's idle timeout can close it under a request
        shared ??= new (agent.constructor as typeof http.Agent)({
          ...(agent as unknown as { options: object }).options,
          keepAlive: true,
          timeout: idleMs,
        });
        context.setAgent(shared);
      }
      return resolved(context);
    },
    post: (response: ResponseContext) => resolved(response),
  };
  return {
    middleware: [connections],
    middlewareMergeStrategy: "append",
    httpApi: new NodeHttpLibrary({ timeoutMs: requestTimeoutMs }),
    close: () => shared?.destroy(),
  };
}

export function createObjectApi(options: ObjectApiOptions): ObjectApi {
  const client = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const call = apiTransport(options.requestTimeoutMs);
  const { namespace } = options;
  const base = (kind: Kind) => ({ group: kind.group ?? GROUP, version: kind.version ?? VERSION, namespace, plural: kind.plural });
  const label = (kind: Kind, name: string | undefined) => `${kind.kind} ${namespace}/${name ?? "?"}`;
  /** One request, errors mapped; a write's unknown outcome after a reset is reported as such (retryOnReset). */
  const run = async <T>(operation: string, object: string, request: () => Promise<T>, kind: "read" | "write"): Promise<T> => {
    try {
      return await retryOnReset(request, kind === "write" ? { write: `${operation} ${object}` } : {});
    } catch (error) {
      throw mapKubeError(error, operation, object, { write: kind === "write" });
    }
  };
  return {
    namespace,
    close: () => call.close(),
    async get(kind, name) {
      try {
        return (await retryOnReset(() => client.getNamespacedCustomObject({ ...base(kind), name }, call))) as KubeObject;
      } catch (error) {
        if (apiFailure(error).status === 404) return undefined;
        throw mapKubeError(error, "get", label(kind, name));
      }
    },
    async list(kind) {
      const items: KubeObject[] = [];
      let token: string | undefined;
      do {
        const page = (await run(
          "list",
          `${kind.plural} in ${namespace}`,
          () => client.listNamespacedCustomObject({ ...base(kind), limit: options.pageSize, ...(token ? { _continue: token } : {}) }, call),
          "read",
        )) as { items?: KubeObject[]; metadata?: { continue?: string } };
        items.push(...(page.items ?? []));
        token = page.metadata?.continue || undefined;
      } while (token !== undefined);
      return items;
    },
    create: (kind, object) =>
      run(
        "create",
        label(kind, object.metadata?.name),
        () => client.createNamespacedCustomObject({ ...base(kind), body: object }, call),
        "write",
      ),
    replace: (kind, object) => {
      const name = object.metadata?.name ?? "";
      return run(
        "replace",
        label(kind, name),
        () => client.replaceNamespacedCustomObject({ ...base(kind), name, body: object }, call),
        "write",
      );
    },
    async remove(kind, name, resourceVersion) {
      await run(
        "delete",
        label(kind, name),
        () => client.deleteNamespacedCustomObject({ ...base(kind), name, body: { preconditions: { resourceVersion } } }, call),
        "write",
      );
    },
  };
}
