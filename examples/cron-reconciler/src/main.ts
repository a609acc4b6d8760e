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
import { createKubernetesPodSource, createKubernetesPodWatch, createLeaderElector, resolveNamespace } from "@ipamkit/storage-kubernetes";
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

async function run(options: Options, logger: Logger, shutdown: AbortSignal): Promise<number> {
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
  const reported = (report: ReconcileReport) => {
    logReport(logger, report);
    metrics?.pass(report);
  };
  try {
    if (options.once) {
      const report = await reconcileOnce(reconcile);
      logReport(logger, report);
      return report.failed.length === 0 ? 0 : 1;
    }
    const work = async (signal: AbortSignal) => {
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
    };
    const leading = async (signal: AbortSignal) => {
      metrics?.leading(true);
      try {
        await work(signal);
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
    logger.info("ipamkit reconciler stopped");
    return 0;
  } finally {
    pods.close();
    await store.close();
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
