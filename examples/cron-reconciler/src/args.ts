import { parseArgs } from "node:util";
import { Cron } from "croner";

/** A usage error: printed with the usage text, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface Options {
  kubeconfig?: string;
  namespace?: string;
  datastore: "kubernetes" | "etcd" | "file";
  etcd: { endpoints?: string[]; username?: string; passwordFile?: string; caFile?: string; certFile?: string; keyFile?: string };
  dataDir?: string;
  once: boolean;
  schedule: string;
  scheduleFile?: string;
  watch: boolean;
  resyncMs: number;
  dryRun: boolean;
  graceMs: number;
  overlappingRanges: boolean;
  claimSettleMs: number;
  /** Keep Whereabouts' node slices (NodeSlicePool status) on each full pass (Kubernetes store). */
  nodeSlices: boolean;
  leaderElection: boolean;
  leaseName: string;
  leaseNamespace?: string;
  identity?: string;
  logLevel: string;
  /** host:port for Prometheus /metrics and /healthz (off when unset). */
  metricsAddress?: string;
}

/** Whereabouts' installer default (`WHEREABOUTS_RECONCILER_CRON`), in UTC. */
export const DEFAULT_SCHEDULE = "30 4 * * *";

export const USAGE = `usage: node dist/main.js [options]
  --kubeconfig PATH        pods (and, by default, pools) come from here; default: KUBECONFIG,
                           ~/.kube/config, then the in-cluster service account
  --namespace NS           pool namespace (default: the kubeconfig context's, else kube-system)
  --datastore KIND         kubernetes | etcd | file (default kubernetes)
  --etcd-endpoints URLS    comma-separated etcd client URLs (datastore etcd)
  --etcd-username NAME     --etcd-password-file PATH (never the password itself on a command line)
  --etcd-ca-file PATH      --etcd-cert-file PATH  --etcd-key-file PATH
  --data-dir DIR           file store directory (datastore file)
  --once                   one full reconcile, then exit: 0 when all went well, 1 otherwise
  --schedule CRON          full reconcile on this cron schedule, UTC (default "${DEFAULT_SCHEDULE}")
  --schedule-file PATH     read the schedule from this file (Whereabouts' /cron-schedule/config),
                           re-read when it changes; wins over --schedule
  --watch                  pod-deletion controller instead of a schedule (watch + --resync)
  --resync DURATION        full reconcile period in --watch mode (default 10m)
  --dry-run                report what would be released or repaired and why; change nothing
  --grace DURATION         never release a reservation younger than this, nor add a missing
                           overlapping-range record for it (default 5m)
  --overlapping-ranges B   true | false: delete overlapping-range records with reservations, and
                           audit them on every full pass: records no entry backs are deleted,
                           records naming another container rewritten, missing ones added
                           (default true; false where networks run with overlapping ranges off)
  --claim-settle DURATION  read an audit finding again this long after it is found, and repair
                           it only if unchanged (in-flight ADDs and DELs finish; default 5s)
  --node-slices B          true | false: after each scheduled or --once pass, give every node without one a slice of
                           each NodeSlicePool and free deleted nodes' idle slices, as Whereabouts'
                           node-slice controller does, for when it is gone (default false;
                           datastore kubernetes; needs list on nodes, list/update nodeslicepools:
                           rbac-reconciler-node-slices.yaml)
  --leader-election B      true | false (default true; --once never elects)
  --lease-name NAME        default ipamkit-reconciler; --lease-namespace NS (default: pool namespace)
  --identity ID            leader-election identity (default: POD_NAME, else the host name)
  --log-level LEVEL        pino level (default info)
  --metrics-address H:P    serve Prometheus /metrics and /healthz there (default off; not with --once)
  --help`;

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `--node-slices`: NodeSlicePools live beside Whereabouts' pools, on the Kubernetes store only. */
function nodeSlicesOf(text: string | undefined, datastore: string, watch: boolean): boolean {
  const on = parseBoolean("--node-slices", text, false);
  if (on && datastore !== "kubernetes")
    throw new UsageError(`--node-slices: needs --datastore kubernetes (NodeSlicePools), not ${datastore}`);
  if (on && watch) throw new UsageError("--node-slices is not used with --watch (it runs after scheduled and --once passes)");
  return on;
}

/** `300ms`, `90s`, `5m`, `1h`, or a bare number of seconds. */
export function parseDuration(flag: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) throw new UsageError(`${flag}: ${JSON.stringify(text)} is not a duration (e.g. 90s, 5m, 1h)`);
  return Math.round(Number(match[1]) * (UNITS[match[2] ?? "s"] ?? 1000));
}

function parseBoolean(flag: string, text: string | undefined, fallback: boolean): boolean {
  if (text === undefined) return fallback;
  if (text === "true") return true;
  if (text === "false") return false;
  throw new UsageError(`${flag}: expected true or false, got ${JSON.stringify(text)}`);
}

/** Validates a cron expression the way it will be used (croner, UTC). */
export function checkSchedule(source: string, expression: string): string {
  try {
    new Cron(expression.trim(), { timezone: "UTC", paused: true }).stop();
  } catch (error) {
    throw new UsageError(`${source}: ${JSON.stringify(expression)} is not a cron expression: ${(error as Error).message}`);
  }
  return expression.trim();
}

export function parseOptions(argv: string[]): Options | "help" {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const v = parsed.values;
  if (v.help === true) return "help";
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  const datastore = v.datastore ?? "kubernetes";
  if (datastore !== "kubernetes" && datastore !== "etcd" && datastore !== "file") {
    throw new UsageError(`--datastore: expected kubernetes, etcd or file, got ${JSON.stringify(datastore)}`);
  }
  if (datastore === "etcd" && v["etcd-endpoints"] === undefined) throw new UsageError("--datastore etcd needs --etcd-endpoints");
  if (datastore === "file" && v["data-dir"] === undefined) throw new UsageError("--datastore file needs --data-dir");
  for (const flag of [
    "etcd-endpoints",
    "etcd-username",
    "etcd-password-file",
    "etcd-ca-file",
    "etcd-cert-file",
    "etcd-key-file",
  ] as const) {
    if (v[flag] !== undefined && datastore !== "etcd") throw new UsageError(`--${flag} is only used with --datastore etcd`);
  }
  if (v["data-dir"] !== undefined && datastore !== "file") throw new UsageError("--data-dir is only used with --datastore file");
  if (v.namespace !== undefined && datastore !== "kubernetes") throw new UsageError("--namespace is only used with --datastore kubernetes");
  const once = v.once === true;
  const watch = v.watch === true;
  if (once && watch) throw new UsageError("--once and --watch exclude each other");
  if (once || watch) {
    for (const flag of ["schedule", "schedule-file"] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is not used with --${once ? "once" : "watch"}`);
    }
  }
  if (v.resync !== undefined && !watch) throw new UsageError("--resync is only used with --watch");
  if (v["metrics-address"] !== undefined && once) throw new UsageError("--metrics-address is not used with --once");
  const resyncMs = parseDuration("--resync", v.resync ?? "10m");
  if (resyncMs <= 0) throw new UsageError("--resync must be positive");
  return {
    ...(v.kubeconfig === undefined ? {} : { kubeconfig: v.kubeconfig }),
    ...(v.namespace === undefined ? {} : { namespace: v.namespace }),
    datastore,
    etcd: {
      ...(v["etcd-endpoints"] === undefined
        ? {}
        : {
            endpoints: v["etcd-endpoints"]
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean),
          }),
      ...(v["etcd-username"] === undefined ? {} : { username: v["etcd-username"] }),
      ...(v["etcd-password-file"] === undefined ? {} : { passwordFile: v["etcd-password-file"] }),
      ...(v["etcd-ca-file"] === undefined ? {} : { caFile: v["etcd-ca-file"] }),
      ...(v["etcd-cert-file"] === undefined ? {} : { certFile: v["etcd-cert-file"] }),
      ...(v["etcd-key-file"] === undefined ? {} : { keyFile: v["etcd-key-file"] }),
    },
    ...(v["data-dir"] === undefined ? {} : { dataDir: v["data-dir"] }),
    once,
    schedule: checkSchedule("--schedule", v.schedule ?? DEFAULT_SCHEDULE),
    ...(v["schedule-file"] === undefined ? {} : { scheduleFile: v["schedule-file"] }),
    watch,
    resyncMs,
    dryRun: v["dry-run"] === true,
    graceMs: parseDuration("--grace", v.grace ?? "5m"),
    overlappingRanges: parseBoolean("--overlapping-ranges", v["overlapping-ranges"], true),
    claimSettleMs: parseDuration("--claim-settle", v["claim-settle"] ?? "5s"),
    nodeSlices: nodeSlicesOf(v["node-slices"], datastore, watch),
    leaderElection: parseBoolean("--leader-election", v["leader-election"], true),
    leaseName: v["lease-name"] ?? "ipamkit-reconciler",
    ...(v["lease-namespace"] === undefined ? {} : { leaseNamespace: v["lease-namespace"] }),
    ...(v.identity === undefined ? {} : { identity: v.identity }),
    logLevel: v["log-level"] ?? "info",
    ...(v["metrics-address"] === undefined ? {} : { metricsAddress: v["metrics-address"] }),
  };
}

function parse(argv: string[]) {
  const string = { type: "string" } as const;
  const flag = { type: "boolean" } as const;
  return parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      kubeconfig: string,
      namespace: string,
      datastore: string,
      "etcd-endpoints": string,
      "etcd-username": string,
      "etcd-password-file": string,
      "etcd-ca-file": string,
      "etcd-cert-file": string,
      "etcd-key-file": string,
      "data-dir": string,
      once: flag,
      schedule: string,
      "schedule-file": string,
      watch: flag,
      resync: string,
      "dry-run": flag,
      grace: string,
      "overlapping-ranges": string,
      "claim-settle": string,
      "node-slices": string,
      "leader-election": string,
      "lease-name": string,
      "lease-namespace": string,
      identity: string,
      "log-level": string,
      "metrics-address": string,
      help: flag,
    },
  });
}
