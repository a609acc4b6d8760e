import {
  type ConditionalReleaseOutcome,
  createIpam,
  InvalidRequestError,
  type Ipam,
  type IpamStore,
  type KeepReason,
  type PoolRef,
  planReconcile,
  poolId,
  RELEASES_PER_WRITE,
  type RetryOptions,
  type Verdict,
} from "@ipamkit/core";
import pino, { type Logger } from "pino";
import { auditClaimsOf, type ClaimAuditReport } from "./claim-audit.js";
import { type HandedReads, handingOnReads } from "./handed-reads.js";
import { mapLimited } from "./map-limited.js";
import { type Observation, observePools } from "./observe.js";
import { cheaperListed, podsFor, revalidate } from "./pod-reads.js";
import type { PodSource } from "./ports.js";

export { RELIST_MIN, RELIST_RATIO } from "./pod-reads.js";

/** Default grace period: a reservation younger than this is never released. */
export const DEFAULT_GRACE_MS = 5 * 60_000;

export interface ReconcileOptions {
  store: IpamStore;
  pods: PodSource;
  /** Default {@link DEFAULT_GRACE_MS}. */
  graceMs?: number;
  /** Report what would be released, change nothing. */
  dryRun?: boolean;
  /** Overlapping-range records are deleted with their reservations (default true, as the CNI plugin). */
  overlappingRanges?: boolean;
  /** Only the reservations of these pods (`namespace/name`): the pod watch's targeted pass. */
  podRefs?: ReadonlySet<string>;
  logger?: Logger;
  now?: () => Date;
  retry?: RetryOptions;
  /** Pools read, pools released and pods re-read, at most this many at once (default {@link DEFAULT_CONCURRENCY}). */
  concurrency?: number;
  /**
   * Full passes with overlapping ranges on also audit the overlapping-range records (claim-audit.ts):
   * a record found without its entry, or an entry without its record, is read again this long
   * after (default {@link DEFAULT_CLAIM_SETTLE_MS}; in-flight ADDs and DELs finish meanwhile).
   */
  claimSettleMs?: number;
  /** Injected for tests: the wait before findings are read again. */
  sleep?: (ms: number) => Promise<void>;
}

export { DEFAULT_CLAIM_SETTLE_MS } from "./claim-audit.js";

/** Requests a pass keeps in flight: each pool's read, each pool's releases and each pod's re-read are independent. */
export const DEFAULT_CONCURRENCY = 8;

export type SkipReason = "pod-revalidated" | Exclude<ConditionalReleaseOutcome, "released">;

export interface ReconcileReport {
  dryRun: boolean;
  pools: number;
  reservations: number;
  /** Released (or, in a dry run, would be released), with the reason. */
  released: Verdict[];
  kept: Partial<Record<KeepReason, number>>;
  /** Orphaned when planned, not released: the pod came back on a fresh read, or the reservation changed or left meanwhile. */
  skipped: { verdict: Verdict; why: SkipReason }[];
  failed: { subject: string; error: Error }[];
  /** The claim audit (full passes with overlapping ranges on), else undefined. */
  claims?: ClaimAuditReport;
  /** Each readable pool as the pass read it (before its releases): reservations and usable addresses. */
  usage: PoolUsage[];
}

export interface PoolUsage {
  pool: PoolRef;
  used: number;
  /** The CIDR's addresses less its network and last address (a config's range_start/end and excludes are not known here). */
  capacity: number;
}

const silent = pino({ level: "silent" });

/**
 * One reconcile pass. Order matters for one thing only, the snapshot race (whereabouts#207):
 * pools are read *before* pods are listed, so every reservation seen belongs to a pod that already
 * existed when the pod list started. Each orphan is re-checked against a fresh read of its pod,
 * then released only if unchanged since observed (compare-and-swap through the store).
 */
export async function reconcileOnce(options: ReconcileOptions): Promise<ReconcileReport> {
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  if (!(graceMs >= 0)) throw new InvalidRequestError("graceMs must be zero or positive");
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new InvalidRequestError("concurrency must be a positive integer");
  const log = options.logger ?? silent;
  const now = options.now ?? (() => new Date());
  const dryRun = options.dryRun === true;

  const observation = await observePools(options.store, {
    concurrency,
    ...(options.podRefs === undefined ? {} : { podRefs: options.podRefs }),
  });
  const pods = await podsFor(
    options,
    observation.reservations.map((o) => o.reservation.podRef ?? ""),
  );
  const plan = planReconcile({ reservations: observation.reservations, pods, now: now(), graceMs });

  const report: ReconcileReport = {
    dryRun,
    pools: observation.pools,
    reservations: observation.reservations.length,
    released: [],
    kept: {},
    skipped: [],
    failed: observation.unreadable.map((u) => ({ subject: `pool ${poolId(u.pool)}`, error: u.error })),
    usage: usageOf(observation),
  };
  for (const u of observation.unreadable) log.error({ pool: poolId(u.pool), err: u.error }, "pool unreadable; left as it is");

  const orphans: Verdict[] = [];
  for (const verdict of plan) {
    if (verdict.release) orphans.push(verdict);
    else report.kept[verdict.reason] = (report.kept[verdict.reason] ?? 0) + 1;
  }
  const confirmed =
    options.podRefs === undefined
      ? await revalidate(orphans, { ...options, concurrency, listed: pods.size }, report, now, graceMs)
      : orphans;
  if (dryRun) {
    for (const v of confirmed) log.info(describe(v), "would release (dry run)");
    report.released.push(...confirmed);
    return auditClaimsOf({ ...options, logger: log }, observation, report, { now, graceMs, concurrency });
  }
  // each pool's release starts from the pool as observed: one write, no read first; many releases'
  // claims are scanned in one bulk read where the store can (handed-reads.ts)
  const claims = await scanClaimsFor(confirmed, options, observation.reservations.length, log);
  const ipam = createIpam({
    store: handingOnReads(options.store, { pools: observation.stored, ...(claims === undefined ? {} : { claims }) }),
    ...(options.overlappingRanges === undefined ? {} : { overlappingRanges: options.overlappingRanges }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    // a sticky reservation released here is marked kept as of this pass's clock
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const outcomes = await mapLimited([...byPool(confirmed)], concurrency, ([pool, verdicts]) => releaseInPool(ipam, pool, verdicts, log));
  for (const outcome of outcomes) {
    report.released.push(...outcome.released);
    report.skipped.push(...outcome.skipped);
    report.failed.push(...outcome.failed);
  }
  return auditClaimsOf({ ...options, logger: log }, observation, report, { now, graceMs, concurrency });
}

/**
 * The claims of the networks being released, in one bulk read (`listClaims` with contents) before any release
 * writes, when the store offers it and there are enough releases for it to be cheaper than a read
 * each; undefined otherwise, or when the scan fails (each release then reads its claims itself).
 */
async function scanClaimsFor(
  confirmed: readonly Verdict[],
  options: ReconcileOptions,
  observed: number,
  log: Logger,
): Promise<HandedReads["claims"]> {
  if (!options.store.capabilities.bulkLists || options.overlappingRanges === false || !cheaperListed(confirmed.length, observed))
    return undefined;
  const networks = new Set(confirmed.map((v) => v.observed.pool.network));
  try {
    return { networks, scanned: await options.store.listClaims([...networks], { contents: true }) };
  } catch (error) {
    log.warn({ err: error }, "claims could not be scanned; each release reads its own");
    return undefined;
  }
}

type PoolOutcome = Pick<ReconcileReport, "released" | "skipped" | "failed">;

/** The confirmed orphans of one pool, released conditionally: one call per conditional write, so a failure reports exactly the releases of that write. */
async function releaseInPool(ipam: Ipam, pool: PoolRef, verdicts: Verdict[], log: Logger): Promise<PoolOutcome> {
  const out: PoolOutcome = { released: [], skipped: [], failed: [] };
  for (let i = 0; i < verdicts.length; i += RELEASES_PER_WRITE) {
    const batch = verdicts.slice(i, i + RELEASES_PER_WRITE);
    try {
      const outcomes = await ipam.releaseAllIf(
        pool,
        batch.map((v) => v.observed.reservation),
      );
      batch.forEach((verdict, n) => {
        const outcome = outcomes[n] ?? "absent";
        if (outcome === "released") {
          out.released.push(verdict);
          log.info(describe(verdict), "released");
        } else {
          out.skipped.push({ verdict, why: outcome });
          log.info(describe(verdict), `not released: the reservation is ${outcome === "changed" ? "changed" : "gone"} since observed`);
        }
      });
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      out.failed.push({ subject: `pool ${poolId(pool)}`, error: err });
      log.error({ pool: poolId(pool), count: batch.length, err }, "release failed; retried on the next pass");
    }
  }
  return out;
}

function byPool(verdicts: Verdict[]): Map<PoolRef, Verdict[]> {
  const groups = new Map<string, { ref: PoolRef; verdicts: Verdict[] }>();
  for (const v of verdicts) {
    const id = poolId(v.observed.pool);
    const group = groups.get(id) ?? { ref: v.observed.pool, verdicts: [] };
    group.verdicts.push(v);
    groups.set(id, group);
  }
  return new Map([...groups.values()].map((g) => [g.ref, g.verdicts]));
}

function usageOf(observation: Observation): PoolUsage[] {
  return observation.refs.flatMap((ref) => {
    const stored = observation.stored.get(poolId(ref));
    return stored === undefined ? [] : [{ pool: ref, used: stored.pool.size, capacity: Number(stored.pool.cidr.size - 2n) }];
  });
}

/** The log fields of one verdict. */
export function describe(verdict: Verdict): Record<string, string> {
  const r = verdict.observed.reservation;
  return {
    pool: poolId(verdict.observed.pool),
    address: verdict.observed.address,
    containerId: r.key.containerId,
    ifName: r.key.ifName,
    podRef: r.podRef ?? "",
    reason: verdict.reason,
    detail: verdict.detail,
  };
}
