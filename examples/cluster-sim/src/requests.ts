import { get as httpGet } from "node:http";
import { get as httpsGet, type RequestOptions } from "node:https";
import { ipamShare, type RequestCounts, totalOf } from "@ipamkit/bench-figures";
import type { Cluster } from "./cluster.js";

/**
 * The requests a cluster's store server answered, by verb and object kind (`get ippools`,
 * `create overlappingrangeipreservations`) or, on etcd, by RPC (`Txn`, `Range`) — read from the
 * server itself, so that every client counts, ipamkit's or not (Whereabouts' binary, the
 * reconciler, the simulation's pods):
 * - the in-process stand-in (`kubernetes`): its own counters;
 * - the real kube-apiserver: its `apiserver_request_total` (/metrics), which also counts its own
 *   requests to itself (a Lease renewal every 10 s: `update leases`);
 * - etcd: its `grpc_server_handled_total` of the KV and Lease services (/metrics).
 * The file store has no server: undefined.
 */
export type { RequestCounts };

/** What each verb of `apiserver_request_total` is called here (the stand-in's names). */
const API_VERBS: Record<string, string> = {
  GET: "get",
  LIST: "list",
  POST: "create",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
  DELETECOLLECTION: "deletecollection",
  WATCH: "watch",
  APPLY: "apply",
};

/** The labels of one Prometheus text-format sample line (`name{a="1",b="2"} 3`), and its value. */
function samples(text: string, metric: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${metric}{`)) continue;
    const close = line.lastIndexOf("}");
    const labels: Record<string, string> = {};
    for (const m of line.slice(metric.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ""] = m[2] ?? "";
    out.push({ labels, value: Number(line.slice(close + 1).trim()) });
  }
  return out;
}

/** `apiserver_request_total` as counts by `verb resource[/subresource]` (every code and component summed). */
export function apiserverCounts(metrics: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const { labels, value } of samples(metrics, "apiserver_request_total")) {
    if (!labels.resource) continue;
    const verb = API_VERBS[labels.verb ?? ""] ?? (labels.verb ?? "").toLowerCase();
    const key = `${verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ""}`;
    counts[key] = (counts[key] ?? 0) + value;
  }
  return counts;
}

/** etcd's handled unary RPCs of the KV and Lease services, by method (`Txn`, `Range`, `Put`, `DeleteRange`, …). */
export function etcdCounts(metrics: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const { labels, value } of samples(metrics, "grpc_server_handled_total")) {
    if (labels.grpc_type !== "unary") continue;
    if (labels.grpc_service !== "etcdserverpb.KV" && labels.grpc_service !== "etcdserverpb.Lease") continue;
    const key = labels.grpc_method ?? "?";
    counts[key] = (counts[key] ?? 0) + value;
  }
  return counts;
}

function fetchText(url: string, options: RequestOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const done = (res: import("node:http").IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${url}: HTTP ${res.statusCode}`))));
      res.on("error", reject);
    };
    const req = url.startsWith("https:") ? httpsGet(url, options, done) : httpGet(url, done);
    req.on("error", reject);
  });
}

/** The requests the cluster's store server has answered so far, or undefined (the file store). */
export async function requestCounts(cluster: Cluster): Promise<RequestCounts | undefined> {
  if (cluster.kind === "kubernetes") return { ...cluster.server.stats().byResource };
  if (cluster.kind === "kube-apiserver" && cluster.apiserver !== undefined) {
    const { url, ca, token } = cluster.apiserver;
    return apiserverCounts(await fetchText(`${url}/metrics`, { ca, headers: { authorization: `Bearer ${token}` } }));
  }
  if (cluster.kind === "etcd" && cluster.etcd !== undefined) return etcdCounts(await fetchText(`${cluster.etcd.endpoint}/metrics`));
  return undefined;
}

/** `after − before`, the keys made at least once. */
export function countsBetween(before: RequestCounts, after: RequestCounts): RequestCounts {
  return Object.fromEntries(
    Object.entries(after)
      .map(([key, n]): [string, number] => [key, n - (before[key] ?? 0)])
      .filter(([, n]) => n > 0),
  );
}

/**
 * From now on, the requests the cluster's store server answers, each time the returned function
 * is called (undefined on the file store).
 */
export async function requestsSince(cluster: Cluster): Promise<() => Promise<RequestCounts | undefined>> {
  const before = await requestCounts(cluster);
  return async () => {
    const after = await requestCounts(cluster);
    return before === undefined || after === undefined ? undefined : countsBetween(before, after);
  };
}

// the IPAM's share of some counts (the simulation's pods left out): the figures read it the same way
export { ipamShare, totalOf };

/** `12,345 requests: 4,000 get ippools, …` — most frequent first. */
export function requestsText(requests: RequestCounts): string {
  const entries = Object.entries(requests).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  return `${totalOf(requests).toLocaleString("en")} requests: ${entries.map(([key, n]) => `${n.toLocaleString("en")} ${key}`).join(", ")}`;
}

/** Requests per call, IPAM's only: `3.00 per ADD (1.00 create overlappingrangeipreservations, …)`. */
export function perCallText(requests: RequestCounts, calls: number, verb: string): string {
  const ipam = ipamShare(requests);
  const entries = Object.entries(ipam).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const each = (n: number) => (n / calls).toFixed(2);
  return `${each(totalOf(ipam))} per ${verb} (${entries.map(([key, n]) => `${each(n)} ${key}`).join(", ")})`;
}
