import type { KubeconfigOptions } from "./kubeconfig.js";

/** The public types of kube-test-server's server (server.ts re-exports them). */

export interface KubeTestServerOptions {
  /** Only 127.0.0.1 is accepted. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** When set, every request needs `Authorization: Bearer <token>` (401 otherwise). */
  token?: string;
  /** The largest stored object (its JSON), like etcd's request limit; larger writes fail as etcd's do. Default 1.5 MiB. */
  maxObjectBytes?: number;
  /** Writes kept for watches from a resourceVersion and for `continue`; older ones answer 410 Expired. Default 1000. */
  historyEvents?: number;
  /** How often a watch with allowWatchBookmarks=true gets a BOOKMARK. Default 1000 ms. */
  bookmarkIntervalMs?: number;
}

/** A failure to answer once (or `times` times) instead of serving a matching request. */
export interface Fault {
  /** HTTP method to match (any when unset). */
  method?: string;
  /** Path prefix to match (any when unset). */
  pathPrefix?: string;
  /** The HTTP status of the Status answered. */
  status: number;
  reason?: string;
  message?: string;
  /** Default 1. */
  times?: number;
}

export interface KubeTestServerStats {
  requests: number;
  byStatus: Record<number, number>;
  /** get, list, watch, create, update, patch, delete, discovery, other */
  byVerb: Record<string, number>;
  /** By verb and resource (`get ippools`, `delete overlappingrangeipreservations`, `update pods/status`); discovery and unrouted requests by verb alone. */
  byResource: Record<string, number>;
}

export interface KubeTestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** A kubeconfig (JSON, which is YAML) for this server: bearer token if configured, the context namespace if given. */
  kubeconfig(options?: KubeconfigOptions): string;
  writeKubeconfig(path: string, options?: KubeconfigOptions): Promise<void>;
  /** Request counters, for tests and benches. */
  stats(): KubeTestServerStats;
  /** Answers the next matching request with a Status of `fault.status` instead of serving it. */
  failNext(fault: Fault): void;
  /** Stops listening and ends open watches and connections. */
  close(): Promise<void>;
}
