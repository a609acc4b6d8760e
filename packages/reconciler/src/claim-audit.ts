import {
  auditClaims,
  type ClaimFinding,
  type ClaimRef,
  cidrContains,
  claimId,
  claimMatches,
  claimOf,
  holderAt,
  type IpamStore,
  isAffinityNetwork,
  type ObservedReservation,
  type PoolRef,
  parseCidr,
  parseIp,
  poolId,
  type RetryOptions,
  repairClaim,
  StoreConflictError,
  scanClaimsOf,
} from "@ipamkit/core";
import pino, { type Logger } from "pino";
import { mapLimited } from "./map-limited.js";
import type { Observation } from "./observe.js";
import type { ReconcileOptions, ReconcileReport } from "./reconcile.js";

/** Default wait before a claim finding is read again: ADDs and DELs write their two objects within ms of each other. */
export const DEFAULT_CLAIM_SETTLE_MS = 5_000;

/**
 * The claim audit of a full pass (overlapping ranges on): overlapping-range records that no pool
 * entry backs, and entries without their record (issue 34: Whereabouts treats every record as
 * taken, so a leftover blocks its address for it). Found from the pools as observed and the claims
 * read after them (core's `auditClaims`); after `settleMs` each finding is read again and repaired
 * only if still there, unchanged, through core's fenced `repairClaim` — a record deleted only at the
 * version read and only after the pool it names is fenced; a missing one created create-if-absent,
 * then fenced. See DESIGN.md, "Claims".
 */

/** Why a finding was left as it is. */
export type ClaimSkipReason =
  /** The record or the entry changed since observed (an ADD or DEL in flight, or another repair). */
  | "changed"
  /** Read again, record and entry match. */
  | "consistent"
  /** Two pools hold the address: for an operator, never the reconciler's to settle. */
  | "ambiguous";

export interface ClaimAuditReport {
  /** Repaired (in a dry run: would be repaired), each with its kind and detail. */
  repaired: ClaimFinding[];
  skipped: { finding: ClaimFinding; why: ClaimSkipReason }[];
  /** Entries without a record, younger than the grace period (their ADD may still be writing it): left for the next pass. */
  young: number;
}

export interface ClaimAuditOptions {
  store: IpamStore;
  /** Every pool observed and read (pools are read before claims) and the reservations they hold now. */
  pools: readonly PoolRef[];
  /** Pools that could not be read: their addresses' records are not judged. */
  unreadable: readonly PoolRef[];
  reservations: readonly ObservedReservation[];
  now: () => Date;
  graceMs: number;
  /** Wait this long before reading a finding again (in-flight ADDs and DELs finish meanwhile). */
  settleMs: number;
  dryRun: boolean;
  concurrency: number;
  log: Logger;
  retry?: RetryOptions;
  sleep?: (ms: number) => Promise<void>;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The log fields of one finding. */
export function describeClaim(finding: ClaimFinding): Record<string, string> {
  const entry = finding.entry?.reservation;
  return {
    network: finding.ref.network,
    address: finding.ref.address,
    kind: finding.kind,
    ...(finding.claim === undefined ? {} : { claimPool: poolId(finding.claim.claim.pool), claimKey: finding.claim.claim.key.containerId }),
    ...(entry === undefined ? {} : { containerId: entry.key.containerId, ifName: entry.key.ifName, podRef: entry.podRef ?? "" }),
    detail: finding.detail,
  };
}

export async function auditClaimsOnce(
  options: ClaimAuditOptions,
): Promise<{ report: ClaimAuditReport; failed: { subject: string; error: Error }[] }> {
  const { store, log } = options;
  const networks = [...new Set(options.pools.map((p) => p.network))].filter((n) => !isAffinityNetwork(n)).sort();
  const claims = await scanClaimsOf(store, networks);
  const audit = auditClaims({ reservations: options.reservations, claims, now: options.now(), graceMs: options.graceMs });
  const { young } = audit;
  const inUnreadable = (ref: ClaimRef) => {
    const ip = parseIp(ref.address);
    return options.unreadable.some((p) => p.network === ref.network && cidrContains(parseCidr(p.cidr), ip));
  };
  const findings = audit.findings.filter((f) => !inUnreadable(f.ref));
  const report: ClaimAuditReport = { repaired: [], skipped: [], young: young.length };
  const failed: { subject: string; error: Error }[] = [];
  if (findings.length === 0) return { report, failed };
  if (options.settleMs > 0) await (options.sleep ?? sleepFor)(options.settleMs);
  const containing = (ref: ClaimRef): PoolRef[] => {
    const ip = parseIp(ref.address);
    return options.pools.filter((p) => p.network === ref.network && cidrContains(parseCidr(p.cidr), ip));
  };
  type Outcome = { finding: ClaimFinding; why: ClaimSkipReason | undefined } | { finding: ClaimFinding; error: Error };
  const outcomes = await mapLimited(findings, options.concurrency, async (finding): Promise<Outcome> => {
    try {
      const pools = containing(finding.ref);
      const why = options.dryRun ? await recheck(store, finding, pools) : await repair(store, finding, pools, options.retry);
      return { finding, why };
    } catch (error) {
      return { finding, error: error instanceof Error ? error : new Error(String(error)) };
    }
  });
  for (const outcome of outcomes) {
    const fields = describeClaim(outcome.finding);
    if ("error" in outcome) {
      failed.push({ subject: `claim ${claimId(outcome.finding.ref)}`, error: outcome.error });
      log.error({ ...fields, err: outcome.error }, "claim repair failed; retried on the next pass");
    } else if (outcome.why === undefined) {
      report.repaired.push(outcome.finding);
      log.info(fields, options.dryRun ? "would repair claim (dry run)" : "claim repaired");
    } else {
      report.skipped.push({ finding: outcome.finding, why: outcome.why });
      log.info(fields, `claim not repaired: ${outcome.why}`);
    }
  }
  return { report, failed };
}

/** Reads a finding again without writing: undefined when it still stands, else why not. */
async function recheck(store: IpamStore, finding: ClaimFinding, pools: readonly PoolRef[]): Promise<ClaimSkipReason | undefined> {
  const now = await store.readClaim(finding.ref, { fresh: true });
  if (now?.version !== finding.claim?.version) return "changed";
  const named = now === undefined ? [] : [now.claim.pool];
  const holders = await holdersOf(store, finding.ref, [...named, ...pools]);
  if (holders.length > 1) return "ambiguous";
  const [held] = holders;
  if (finding.kind === "entry-without-claim") {
    const entry = finding.entry;
    return held !== undefined && entry !== undefined && claimMatches(claimOf(entry.pool, entry.reservation), held.pool, held.reservation)
      ? undefined
      : "changed";
  }
  return held !== undefined && now !== undefined && claimMatches(now.claim, held.pool, held.reservation) ? "consistent" : undefined;
}

/** The entries holding the address among these pools, read now. */
async function holdersOf(
  store: IpamStore,
  ref: ClaimRef,
  pools: readonly PoolRef[],
): Promise<{ pool: PoolRef; reservation: NonNullable<ReturnType<typeof holderAt>> }[]> {
  const unique = [...new Map(pools.map((p) => [poolId(p), p])).values()];
  const reads = await Promise.all(unique.map((p) => store.readPool(p)));
  return unique.flatMap((pool, i) => {
    const stored = reads[i];
    const reservation = stored === undefined ? undefined : holderAt(stored.pool, ref.address);
    return reservation === undefined ? [] : [{ pool, reservation }];
  });
}

async function repair(
  store: IpamStore,
  finding: ClaimFinding,
  pools: readonly PoolRef[],
  retry: RetryOptions | undefined,
): Promise<ClaimSkipReason | undefined> {
  let expected = finding.claim?.version;
  let written = false;
  if (finding.kind === "entry-without-claim") {
    const still = await recheck(store, finding, pools);
    if (still !== undefined) return still;
    const entry = finding.entry as ObservedReservation;
    try {
      expected = await store.writeClaim(finding.ref, claimOf(entry.pool, entry.reservation), undefined);
      written = true;
    } catch (error) {
      if (error instanceof StoreConflictError) return "changed";
      throw error;
    }
  }
  const done = await repairClaim(store, finding.ref, {
    ...(expected === undefined ? {} : { expected }),
    pools,
    written,
    ...(retry === undefined ? {} : { retry }),
  });
  if (done.kind === "ambiguous") return "ambiguous";
  // a restored record stands only if it still matches (its entry may have gone meanwhile: then repaired away)
  if (written) return done.kind === "consistent" ? undefined : "changed";
  if (done.kind === "deleted" || done.kind === "rewritten") return undefined;
  return done.kind === "consistent" ? "consistent" : "changed";
}

/**
 * The claim audit of a full pass (not a targeted one; not with overlapping ranges off), after the
 * releases: against the pools as observed, less what this pass released.
 */
export async function auditClaimsOf(
  options: ReconcileOptions,
  observation: Observation,
  report: ReconcileReport,
  { now, graceMs, concurrency }: { now: () => Date; graceMs: number; concurrency: number },
): Promise<ReconcileReport> {
  if (options.podRefs !== undefined || options.overlappingRanges === false) return report;
  const log = options.logger ?? pino({ level: "silent" });
  const released = new Set(report.dryRun ? [] : report.released.map((v) => v.observed));
  const unreadable = observation.unreadable.map((u) => u.pool);
  const unreadableIds = new Set(unreadable.map(poolId));
  try {
    const { report: claims, failed } = await auditClaimsOnce({
      store: options.store,
      pools: observation.refs.filter((p) => !unreadableIds.has(poolId(p))),
      unreadable,
      reservations: observation.reservations.filter((o) => !released.has(o)),
      now,
      graceMs,
      settleMs: options.claimSettleMs ?? DEFAULT_CLAIM_SETTLE_MS,
      dryRun: report.dryRun,
      concurrency,
      log,
      ...(options.retry === undefined ? {} : { retry: options.retry }),
      ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
    });
    report.claims = claims;
    report.failed.push(...failed);
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    report.failed.push({ subject: "claims", error: err });
    log.error({ err }, "claims could not be audited; retried on the next pass");
  }
  return report;
}
