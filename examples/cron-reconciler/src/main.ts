import { hostname } from "node:os";
import {
  describe,
  describeClaim,
  type LeaderElector,
  type ReconcileOptions,
  type ReconcileReport,
  reconcileOnce,
  runPodController,
} from "@ipamkit/reconciler";
import {
  createKubernetesPodSource,
  createKubernetesPodWatch,
  createLeaderElector,
  reconcileNodeSlices,
  resolveNamespace,
} from "@ipamkit/storage-kubernetes";
import pino, { type Logger } from "pino";
import { type Options, parseOptions, USAGE, UsageError } from "./args.js";
import { loadProgramKubeConfig } from "./kubeconfig.js";
import { failureLine, serializeError } from "./log-error.js";
import { openStore } from "./open-store.js";
import { runOnSchedule } from "./schedule.js";

/** How many of each. */
const countBy = (items: readonly string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[item] = (out[item] ?? 0) + 1;
  return out;
};

/** One summary line per pass, beside the per-release and per-claim log lines. */
function logReport(logger: Logger, report: ReconcileReport): void {
  for (const f of report.failed) logger.error({ subject: f.subject, err: f.error }, "reconcile failure");
  logger.info(
    {
      dryRun: report.dryRun,
      pools: report.pools,
      reservations: report.reservations,
      released: report.released.length,
      kept: report.kept,
      skipped: report.skipped.map((s) => ({ ...describe(s.verdict), why: s.why })),
      ...(report.claims === undefined
        ? {}
        : {
            claims: {
              repaired: countBy(report.claims.repaired.map((f) => f.kind)),
              skipped: report.claims.skipped.map((s) => ({ ...describeClaim(s.finding), why: s.why })),
              young: report.claims.young,
            },
          }),
      failed: report.failed.length,
    },
    report.dryRun ? "dry run finished" : "reconcile finished",
  );
}

type Metrics = Awaited<ReturnType<typeof startMetrics>>;

/** What one run holds open: the store, the pod source and (if asked for) the metrics server. */
type Running = {
  options: Options;
  logger: Logger;
  kubeConfig: ReturnType<typeof loadProgramKubeConfig>["kubeConfig"];
  namespace: string;
  pods: ReturnType<typeof createKubernetesPodSource>;
  reconcile: ReconcileOptions;
  metrics: Metrics | undefined;
};

/** Opens the store and the pod source, logs the start, and starts the metrics server if asked for. */
async function startRunning(options: Options, logger: Logger, shutdown: AbortSignal): Promise<Running> {
  const { kubeConfig, source } = loadProgramKubeConfig(options.kubeconfig);
  const namespace = resolveNamespace(kubeConfig, options.namespace);
  const store = await openStore(options, kubeConfig, namespace);
  const pods = createKubernetesPodSource({ kubeConfig });
  const reconcile: ReconcileOptions = {
    store,
    pods,
    graceMs: options.graceMs,
    dryRun: options.dryRun,
    overlappingRanges: options.overlappingRanges,
    claimSettleMs: options.claimSettleMs,
    logger,
  };
  logger.info(
    {
      datastore: options.datastore,
      namespace,
      dryRun: options.dryRun,
      graceMs: options.graceMs,
      kubeconfig: source,
      server: kubeConfig.getCurrentCluster()?.server,
    },
    "ipamkit reconciler starting",
  );
  const metrics = options.metricsAddress === undefined ? undefined : await startMetrics(options.metricsAddress, logger, shutdown);
  return { options, logger, kubeConfig, namespace, pods, reconcile, metrics };
}

/** `--node-slices`: Whereabouts' node slices kept after a full pass; false when that failed (logged). */
async function keepNodeSlices(running: Running): Promise<boolean> {
  const { options, logger, kubeConfig, namespace } = running;
  if (!options.nodeSlices) return true;
  try {
    const pass = await reconcileNodeSlices({ kubeConfig, namespace });
    for (const a of pass.assigned) logger.info(a, "node slice assigned");
    for (const f of pass.freed) logger.info(f, "node slice freed (its node is gone, its IPPool empty)");
    for (const w of pass.waiting) logger.warn(w, "no free node slice for this node");
    for (const k of pass.skipped) logger.warn(k, "node slice pool left to the next pass");
    return true;
  } catch (error) {
    const [fields, text] = failureLine("node slices failed", error);
    logger.error(fields, text);
    return false;
  }
}

/** The leader's work until `signal`: the pod controller (--watch) or the scheduled passes. */
async function work(running: Running, signal: AbortSignal): Promise<void> {
  const { options, logger, kubeConfig, reconcile, metrics } = running;
  const reported = (report: ReconcileReport) => {
    logReport(logger, report);
    metrics?.pass(report);
  };
  if (options.watch) {
    await runPodController(
      {
        ...reconcile,
        podWatch: createKubernetesPodWatch({ kubeConfig }),
        resyncMs: options.resyncMs,
        onPass: (p) => p.report && reported(p.report),
      },
      signal,
    );
    return;
  }
  const job = async () => {
    try {
      reported(await reconcileOnce(reconcile));
      await keepNodeSlices(running);
    } catch (error) {
      metrics?.passFailed();
      const [fields, text] = failureLine("reconcile failed", error);
      logger.error(fields, `${text} (tried again at the next scheduled time)`);
    }
  };
  await runOnSchedule(
    { schedule: options.schedule, ...(options.scheduleFile === undefined ? {} : { scheduleFile: options.scheduleFile }), logger },
    job,
    signal,
  );
}

/** Works until shutdown: at once, or while holding the lease under --leader-election. */
async function workUntilShutdown(running: Running, shutdown: AbortSignal): Promise<void> {
  const { options, logger, kubeConfig, namespace, metrics } = running;
  const leading = async (signal: AbortSignal) => {
    metrics?.leading(true);
    try {
      await work(running, signal);
    } finally {
      metrics?.leading(false);
    }
  };
  if (!options.leaderElection) await leading(shutdown);
  else {
    const elector: LeaderElector = createLeaderElector({
      kubeConfig,
      namespace: options.leaseNamespace ?? namespace,
      name: options.leaseName,
      identity: options.identity ?? process.env.POD_NAME ?? hostname(),
      logger,
    });
    await elector.run(leading, shutdown);
  }
}

async function run(options: Options, logger: Logger, shutdown: AbortSignal): Promise<number> {
  const running = await startRunning(options, logger, shutdown);
  const { pods, reconcile, metrics } = running;
  try {
    if (options.once) {
      const report = await reconcileOnce(reconcile);
      logReport(logger, report);
      const sliced = await keepNodeSlices(running);
      return report.failed.length === 0 && sliced ? 0 : 1;
    }
    await workUntilShutdown(running, shutdown);
    logger.info("ipamkit reconciler stopped");
    return 0;
  } finally {
    pods.close();
    await reconcile.store.close();
    await metrics?.close();
  }
}

/** Prometheus /metrics and /healthz (200 until shutdown); prom-client is loaded only here. */
async function startMetrics(address: string, logger: Logger, shutdown: AbortSignal) {
  const [{ startMetricsServer }, { createReconcilerMetrics }] = await Promise.all([
    import("@ipamkit/agent/metrics"),
    import("./metrics.js"),
  ]);
  const metrics = createReconcilerMetrics();
  const server = await startMetricsServer({ address, registry: metrics.registry, healthy: () => !shutdown.aborted });
  logger.info({ url: server.url }, "metrics listening");
  return { ...metrics, close: () => server.close() };
}

/** Exit codes: 0 done, 1 a failed pass (or a failure to start), 2 a usage error. Never a stack trace as the answer. */
async function main(): Promise<number> {
  let options: Options | "help";
  let logger: Logger;
  try {
    options = parseOptions(process.argv.slice(2));
    if (options === "help") {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (options.metricsAddress !== undefined) {
      const { parseListenAddress } = await import("@ipamkit/agent/metrics");
      try {
        parseListenAddress(options.metricsAddress);
      } catch (error) {
        throw new UsageError(`--metrics-address: ${(error as Error).message}`);
      }
    }
    try {
      logger = pino({ level: options.logLevel, serializers: { err: serializeError } });
    } catch {
      throw new UsageError(`--log-level: unknown level ${JSON.stringify(options.logLevel)}`);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`error: ${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  const shutdown = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info({ signal }, "stopping");
      shutdown.abort();
    });
  }
  try {
    return await run(options, logger, shutdown.signal);
  } catch (error) {
    logger.error(...failureLine("reconciler failed", error));
    return 1;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
