import { claimMatches } from "./claim-repair.js";
import { cidrContains, type Ip, parseCidr, parseIp } from "./ip.js";
import { formatKey } from "./key.js";
import { protocolBreaks } from "./protocol-breaks.js";
import { keepExpired, type Reservation } from "./reservation.js";
import { type Claim, type ClaimRef, comparePoolRefs, type PoolRef, poolId, type ScannedClaim, type Version } from "./store.js";

/**
 * Reconcile planning: is a reservation orphaned? Pure — the caller observes pools and pods and
 * passes the clock. The verdict for one reservation depends only on that reservation and its pod,
 * never on iteration order or on other reservations (Whereabouts released "the first entry with
 * this pod name" in map order and freed live IPs: whereabouts#176). See the reconciler's DESIGN.md.
 */

/** What the reconciler needs to know about one live pod. */
export interface PodFacts {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** `status.phase`: Pending, Running, Succeeded, Failed or Unknown. */
  readonly phase: string;
  /** Being deleted by the taint manager (condition DisruptionTarget=True, reason DeletionByTaintManager). */
  readonly evictedByTaintManager: boolean;
  /**
   * Multus `k8s.v1.cni.cncf.io/network-status` entries (default network included); undefined when
   * the pod has no such annotation or it does not parse.
   */
  readonly networkStatus?: readonly NetworkStatusEntry[];
}

export interface NetworkStatusEntry {
  readonly name?: string;
  readonly interface?: string;
  /** Canonical address texts. */
  readonly ips: readonly string[];
  readonly default?: boolean;
}

/** A reservation as read from its pool. */
export interface ObservedReservation {
  readonly pool: PoolRef;
  /** Canonical address text. */
  readonly address: string;
  readonly reservation: Reservation;
}

export type OrphanReason =
  | "pod-missing"
  | "pod-uid-changed"
  | "pod-terminal"
  | "pod-evicted"
  | "ip-not-in-network-status"
  /** A sticky address kept for its pod after a release, and its keep time has run out: freed. */
  | "sticky-expired";
export type KeepReason =
  | "no-pod-ref"
  | "within-grace"
  | "pod-pending"
  | "no-network-status"
  | "network-status-silent"
  | "live"
  /** A sticky address kept for its pod after a release, within its keep time. */
  | "sticky-kept";

export type Verdict =
  | { readonly observed: ObservedReservation; readonly release: true; readonly reason: OrphanReason; readonly detail: string }
  | { readonly observed: ObservedReservation; readonly release: false; readonly reason: KeepReason; readonly detail: string };

export interface JudgeOptions {
  readonly now: Date;
  /** Reservations younger than this (by their `createdAt`) are never orphaned. */
  readonly graceMs: number;
}

const TERMINAL = new Set(["Succeeded", "Failed"]);

/** `namespace/name`, the form reservations record as podRef. */
export function podRefOf(pod: { readonly namespace: string; readonly name: string }): string {
  return `${pod.namespace}/${pod.name}`;
}

/**
 * The network-status entries that speak for this attachment: the one of its interface; for a
 * legacy reservation without ifname, those listing any address of the pool's CIDR.
 */
function entriesFor(observed: ObservedReservation, status: readonly NetworkStatusEntry[]): NetworkStatusEntry[] {
  const ifName = observed.reservation.key.ifName;
  if (ifName !== "") return status.filter((e) => e.interface === ifName);
  const cidr = parseCidr(observed.pool.cidr);
  const inPool = (text: string) => {
    let ip: Ip;
    try {
      ip = parseIp(text);
    } catch {
      return false;
    }
    return cidrContains(cidr, ip);
  };
  return status.filter((e) => e.ips.some(inPool));
}

function ageMs(reservation: Reservation, now: Date): number | undefined {
  if (reservation.createdAt === undefined) return undefined;
  const created = Date.parse(reservation.createdAt);
  return Number.isNaN(created) ? undefined : now.getTime() - created;
}

/** The verdict for one reservation given its pod (undefined: no such pod). */
export function judgeReservation(observed: ObservedReservation, pod: PodFacts | undefined, options: JudgeOptions): Verdict {
  const { reservation } = observed;
  if (reservation.releasedAt !== undefined) return judgeKept(observed, options.now);
  const verdict = judgeHeld(observed, pod, options);
  // sticky: releasing a held sticky reservation marks it kept for its pod (the store keeps it;
  // a reborn pod's ADD takes it back), freed only once its keep time has run out (DESIGN.md)
  return verdict.release && reservation.sticky !== undefined
    ? {
        ...verdict,
        detail: `${verdict.detail}; sticky: kept for ${reservation.podRef ?? "its pod"} for ${reservation.sticky} s, then freed`,
      }
    : verdict;
}

function judgeKept(observed: ObservedReservation, now: Date): Verdict {
  const { reservation } = observed;
  const who = reservation.podRef ?? "its pod";
  if (keepExpired(reservation, now) || protocolBreaks.stickyExpireAtOnce) {
    return {
      observed,
      release: true,
      reason: "sticky-expired",
      detail: `kept for ${who} since ${reservation.releasedAt}, ${reservation.sticky ?? 0} s ago or more`,
    };
  }
  return {
    observed,
    release: false,
    reason: "sticky-kept",
    detail: `kept for ${who} since ${reservation.releasedAt} (${reservation.sticky ?? 0} s)`,
  };
}

function judgeHeld(observed: ObservedReservation, pod: PodFacts | undefined, options: JudgeOptions): Verdict {
  const keep = (reason: KeepReason, detail: string): Verdict => ({ observed, release: false, reason, detail });
  const orphan = (reason: OrphanReason, detail: string): Verdict => ({ observed, release: true, reason, detail });
  const { reservation } = observed;
  const podRef = reservation.podRef;
  if (podRef === undefined || podRef === "") return keep("no-pod-ref", "the reservation names no pod");
  const age = ageMs(reservation, options.now);
  if (age !== undefined && age < options.graceMs) return keep("within-grace", `created ${Math.round(age / 1000)} s ago`);
  if (pod === undefined) return orphan("pod-missing", `pod ${podRef} does not exist`);
  if (reservation.podUid !== undefined && reservation.podUid !== "" && reservation.podUid !== pod.uid) {
    return orphan("pod-uid-changed", `pod ${podRef} is now UID ${pod.uid}, the reservation was made for UID ${reservation.podUid}`);
  }
  if (TERMINAL.has(pod.phase)) return orphan("pod-terminal", `pod ${podRef} is ${pod.phase}`);
  if (pod.evictedByTaintManager) return orphan("pod-evicted", `pod ${podRef} is being deleted by the taint manager`);
  if (pod.phase === "Pending") return keep("pod-pending", `pod ${podRef} is Pending`);
  if (pod.networkStatus === undefined) return keep("no-network-status", `pod ${podRef} has no readable network-status`);
  const entries = entriesFor(observed, pod.networkStatus);
  const listed = entries.flatMap((e) => e.ips);
  if (listed.length === 0) return keep("network-status-silent", `pod ${podRef}'s network-status lists no address for this attachment`);
  if (listed.includes(observed.address)) return keep("live", `pod ${podRef} uses ${observed.address}`);
  return orphan("ip-not-in-network-status", `pod ${podRef}'s network-status lists ${listed.join(", ")}, not ${observed.address}`);
}

/** Stable order of observations: pool, then offset. */
export function compareObserved(a: ObservedReservation, b: ObservedReservation): number {
  const byPool = comparePoolRefs(a.pool, b.pool);
  if (byPool !== 0) return byPool;
  return a.reservation.offset < b.reservation.offset ? -1 : a.reservation.offset > b.reservation.offset ? 1 : 0;
}

export interface PlanInput extends JudgeOptions {
  readonly reservations: readonly ObservedReservation[];
  /** Live pods by `namespace/name`. */
  readonly pods: ReadonlyMap<string, PodFacts>;
}

/** One verdict per reservation, in stable order (pool, offset) whatever the input order. */
export function planReconcile(input: PlanInput): Verdict[] {
  return [...input.reservations]
    .sort(compareObserved)
    .map((observed) => judgeReservation(observed, input.pods.get(observed.reservation.podRef ?? ""), input));
}

/**
 * Claims against entries (overlapping ranges on): what the pools say each claim should be. A claim
 * is backed when the pool it names holds its address for the key it names. Pure: the caller reads
 * the pools, then the claims, and re-checks every finding against fresh reads before it repairs.
 */
export type ClaimFindingKind =
  /** No pool of the network holds the address: a lost race's or a crash's leftover, or Whereabouts' DEL in flight. */
  | "claim-without-entry"
  /** A pool holds the address, for another key or in another pool than the claim names. */
  | "claim-names-other-entry"
  /** A pool holds the address and no claim protects it: another overlapping pool could take it. */
  | "entry-without-claim";

export interface ClaimFinding {
  readonly kind: ClaimFindingKind;
  readonly ref: ClaimRef;
  /** The claim as read (absent for "entry-without-claim"), and its version. */
  readonly claim?: { readonly claim: Claim; readonly version: Version };
  /** The entry holding the address, if any. */
  readonly entry?: ObservedReservation;
  readonly detail: string;
}

export interface ClaimAuditInput {
  /** Every reservation of the networks audited, as read (pools read *before* the claims). */
  readonly reservations: readonly ObservedReservation[];
  /** Every claim of those networks, read after the pools. */
  readonly claims: readonly ScannedClaim[];
  readonly now: Date;
  /** Entries younger than this (their `createdAt`) may still be writing their claim: not reported missing. */
  readonly graceMs: number;
}

export interface ClaimAudit {
  readonly findings: ClaimFinding[];
  /** Entries without a claim left alone for now: younger than the grace period. */
  readonly young: ObservedReservation[];
}

const holderText = (o: ObservedReservation) => `${poolId(o.pool)} ${formatKey(o.reservation.key)}`;
const claimText = (c: Claim) => `${poolId(c.pool)} ${formatKey(c.key)}`;
const addressKey = (network: string, address: string) => `${network}\n${address}`;

/** Every claim that no entry backs and every entry without a claim, in (network, address) order. */
export function auditClaims(input: ClaimAuditInput): ClaimAudit {
  const held = new Map<string, ObservedReservation>();
  for (const o of input.reservations) held.set(addressKey(o.pool.network, o.address), o);
  const findings: ClaimFinding[] = [];
  const claimed = new Set<string>();
  for (const { ref, stored } of input.claims) {
    const id = addressKey(ref.network, ref.address);
    claimed.add(id);
    const entry = held.get(id);
    const claim = { claim: stored.claim, version: stored.version };
    if (entry === undefined) {
      findings.push({
        kind: "claim-without-entry",
        ref,
        claim,
        detail: `it names ${claimText(stored.claim)}; no pool holds ${ref.address}`,
      });
    } else if (!claimMatches(stored.claim, entry.pool, entry.reservation)) {
      findings.push({
        kind: "claim-names-other-entry",
        ref,
        claim,
        entry,
        detail: `it names ${claimText(stored.claim)}; ${holderText(entry)} holds ${ref.address}`,
      });
    }
  }
  const young: ObservedReservation[] = [];
  for (const [id, entry] of held) {
    if (claimed.has(id)) continue;
    const age = ageMs(entry.reservation, input.now);
    if (age !== undefined && age < input.graceMs) {
      young.push(entry);
      continue;
    }
    const ref = { network: entry.pool.network, address: entry.address };
    findings.push({ kind: "entry-without-claim", ref, entry, detail: `${holderText(entry)} holds ${entry.address} without a claim` });
  }
  const order = (f: ClaimFinding) => addressKey(f.ref.network, f.ref.address);
  findings.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  return { findings, young };
}
