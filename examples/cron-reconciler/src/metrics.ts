import type { ReconcileReport } from "@ipamkit/reconciler";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";

/** What the reconciler tells its metrics: each pass's report, a pass that threw, leadership. */
export interface ReconcilerMetrics {
  readonly registry: Registry;
  pass(report: ReconcileReport): void;
  passFailed(): void;
  leading(on: boolean): void;
}

/**
 * The reconciler's Prometheus metrics (`--metrics-address`): passes by result, releases by reason,
 * claim repairs by kind (each labelled dry_run), the last pass's pools and reservations and time,
 * each pool's used and usable addresses,
 * and whether this instance leads.
 */
export function createReconcilerMetrics(): ReconcilerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "ipamkit_reconciler_" });
  const registers = [registry];
  const passes = new Counter({
    name: "ipamkit_reconciler_passes_total",
    help: "Full or targeted reconcile passes, by result (ok; failures: some releases or repairs failed; error: the pass could not run).",
    labelNames: ["result"] as const,
    registers,
  });
  const releases = new Counter({
    name: "ipamkit_reconciler_releases_total",
    help: "Reservations released (dry_run: would be released), by the reconciler's reason.",
    labelNames: ["reason", "dry_run"] as const,
    registers,
  });
  const repairs = new Counter({
    name: "ipamkit_reconciler_claim_repairs_total",
    help: "Overlapping-range records repaired (dry_run: would be repaired), by finding kind.",
    labelNames: ["kind", "dry_run"] as const,
    registers,
  });
  const pools = new Gauge({ name: "ipamkit_reconciler_pools", help: "Pools read by the last pass.", registers });
  const reservations = new Gauge({ name: "ipamkit_reconciler_reservations", help: "Reservations seen by the last pass.", registers });
  const used = new Gauge({
    name: "ipamkit_pool_addresses_used",
    help: "Reservations in each pool, as the last full or targeted pass read it (before its releases).",
    labelNames: ["network", "pool"] as const,
    registers,
  });
  const capacity = new Gauge({
    name: "ipamkit_pool_addresses_capacity",
    help: "Usable addresses of each pool's CIDR (network and last address left out; a config's range_start, range_end and exclude are not known to the reconciler).",
    labelNames: ["network", "pool"] as const,
    registers,
  });
  const last = new Gauge({
    name: "ipamkit_reconciler_last_pass_timestamp_seconds",
    help: "When the last pass finished (Unix time).",
    registers,
  });
  const leader = new Gauge({
    name: "ipamkit_reconciler_leader",
    help: "1 while this instance leads (or runs without leader election), else 0.",
    registers,
  });
  leader.set(0);
  return {
    registry,
    pass(report) {
      const dryRun = String(report.dryRun);
      passes.inc({ result: report.failed.length === 0 ? "ok" : "failures" });
      for (const verdict of report.released) releases.inc({ reason: verdict.reason, dry_run: dryRun });
      for (const finding of report.claims?.repaired ?? []) repairs.inc({ kind: finding.kind, dry_run: dryRun });
      pools.set(report.pools);
      reservations.set(report.reservations);
      // pools that are gone leave no series behind
      used.reset();
      capacity.reset();
      for (const u of report.usage) {
        const labels = { network: u.pool.network, pool: u.pool.cidr };
        used.set(labels, u.used);
        capacity.set(labels, u.capacity);
      }
      last.set(Date.now() / 1000);
    },
    passFailed() {
      passes.inc({ result: "error" });
    },
    leading(on) {
      leader.set(on ? 1 : 0);
    },
  };
}
