import {
  auditClaims,
  cidrContains,
  cidrsOverlap,
  formatKey,
  type IpamStore,
  isAffinityNetwork,
  isLegacyKey,
  type ObservedReservation,
  type PodFacts,
  parseCidr,
  parseIp,
  planReconcile,
  poolId,
  scanClaimsOf,
} from "@ipamkit/core";
import { type Inventory, type Progress, readInventory } from "./inventory.js";
import type { StoreSpec } from "./store-spec.js";

export type FindingKind =
  /** One address held by two reservations of a network (two overlapping pools). */
  | "held-twice"
  /** One key holding two addresses in overlapping pools of a network. */
  | "key-twice"
  | "claim-without-entry"
  | "claim-names-other-entry"
  | "entry-without-claim"
  /** The reservation's pod is gone (or reborn, terminal, evicted), as the reconciler judges it. */
  | "pod-gone"
  /** A Whereabouts entry without an interface name (released by container ID alone). */
  | "legacy-entry"
  /** A pool whose stored data cannot be read. */
  | "unreadable-pool";

export interface Finding {
  kind: FindingKind;
  network: string;
  address?: string;
  pool?: string;
  key?: string;
  podRef?: string;
  detail: string;
}

export interface AuditOptions {
  store: IpamStore;
  spec: StoreSpec;
  /** Live pods (Kubernetes): undefined skips the dead-pod check. */
  pods?: () => Promise<ReadonlyMap<string, PodFacts>>;
  /** Audit overlapping-range claims (default: the config's enable_overlapping_ranges, else true). */
  claims: boolean;
  /** Entries younger than this are not judged (as the reconciler's grace). */
  graceMs: number;
  now: () => Date;
  progress: Progress;
}

export interface AuditReport {
  pools: number;
  reservations: number;
  checked: { claims: boolean; pods: boolean };
  findings: Finding[];
}

const of = (o: ObservedReservation) => ({
  network: o.pool.network,
  address: o.address,
  pool: poolId(o.pool),
  key: formatKey(o.reservation.key),
  ...(o.reservation.podRef === undefined ? {} : { podRef: o.reservation.podRef }),
});

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = keyOf(item);
    const list = out.get(k);
    if (list === undefined) out.set(k, [item]);
    else list.push(item);
  }
  return out;
}

/** Double holds: an address in two pools of a network; a key in two overlapping pools of a network. */
function doubleHolds(reservations: readonly ObservedReservation[]): Finding[] {
  const findings: Finding[] = [];
  for (const holders of groupBy(reservations, (o) => `${o.pool.network}\n${o.address}`).values()) {
    if (holders.length < 2) continue;
    const first = holders[0] as ObservedReservation;
    const who = holders.map((h) => `${poolId(h.pool)} ${formatKey(h.reservation.key)}`).join(", ");
    findings.push({ kind: "held-twice", ...of(first), pool: holders.map((h) => poolId(h.pool)).join(", "), detail: `held by ${who}` });
  }
  for (const held of groupBy(reservations, (o) => `${o.pool.network}\n${formatKey(o.reservation.key)}`).values()) {
    for (let i = 0; i < held.length; i++) {
      for (let j = i + 1; j < held.length; j++) {
        const a = held[i] as ObservedReservation;
        const b = held[j] as ObservedReservation;
        if (a.address === b.address || !cidrsOverlap(parseCidr(a.pool.cidr), parseCidr(b.pool.cidr))) continue;
        findings.push({ kind: "key-twice", ...of(a), detail: `also holds ${b.address} in ${poolId(b.pool)}` });
      }
    }
  }
  return findings;
}

async function claimFindings(options: AuditOptions, inventory: Inventory): Promise<Finding[]> {
  const reservations = inventory.reservations.filter((o) => !isAffinityNetwork(o.pool.network));
  const networks = [...new Set(inventory.pools.map((p) => p.ref.network))].filter((n) => !isAffinityNetwork(n)).sort();
  options.progress(`reading the overlapping-range claims of ${networks.length} network(s)`);
  const claims = await scanClaimsOf(options.store, networks);
  // an unreadable pool's addresses are not judged: its entries are unknown
  const unreadable = inventory.pools.filter((p) => p.error !== undefined).map((p) => p.ref);
  const inUnreadable = (network: string, address: string) =>
    unreadable.some((p) => p.network === network && cidrContains(parseCidr(p.cidr), parseIp(address)));
  const audit = auditClaims({ reservations, claims, now: options.now(), graceMs: options.graceMs });
  return audit.findings
    .filter((f) => !inUnreadable(f.ref.network, f.ref.address))
    .map((f) => ({
      kind: f.kind,
      network: f.ref.network,
      address: f.ref.address,
      ...(f.entry === undefined ? {} : { pool: poolId(f.entry.pool), key: formatKey(f.entry.reservation.key) }),
      ...(f.entry?.reservation.podRef === undefined ? {} : { podRef: f.entry.reservation.podRef }),
      ...(f.claim === undefined || f.entry !== undefined ? {} : { pool: poolId(f.claim.claim.pool), key: formatKey(f.claim.claim.key) }),
      detail: f.detail,
    }));
}

async function podFindings(options: AuditOptions, inventory: Inventory): Promise<Finding[]> {
  if (options.pods === undefined) return [];
  options.progress("listing pods");
  const pods = await options.pods();
  const verdicts = planReconcile({ reservations: inventory.reservations, pods, now: options.now(), graceMs: options.graceMs });
  return verdicts.flatMap((v) => (v.release ? [{ kind: "pod-gone" as const, ...of(v.observed), detail: `${v.reason}: ${v.detail}` }] : []));
}

/** One scan: every check on the store as read now. */
export async function auditOnce(options: AuditOptions): Promise<AuditReport> {
  const inventory = await readInventory(options.store, options.spec, options.progress);
  const findings: Finding[] = inventory.pools.flatMap((p) =>
    p.error === undefined
      ? []
      : [{ kind: "unreadable-pool" as const, network: p.ref.network, pool: poolId(p.ref), detail: p.error.message.split("\n")[0] ?? "" }],
  );
  findings.push(...doubleHolds(inventory.reservations));
  if (options.claims) findings.push(...(await claimFindings(options, inventory)));
  findings.push(...(await podFindings(options, inventory)));
  for (const o of inventory.reservations) {
    if (isLegacyKey(o.reservation.key)) {
      findings.push({ kind: "legacy-entry", ...of(o), detail: "a Whereabouts entry without ifname: released by container ID alone" });
    }
  }
  return {
    pools: inventory.pools.length,
    reservations: inventory.reservations.length,
    checked: { claims: options.claims, pods: options.pods !== undefined },
    findings,
  };
}

const findingId = (f: Finding) => [f.kind, f.network, f.address ?? "", f.pool ?? "", f.key ?? ""].join("|");

/**
 * The audit: a scan, and when it finds anything, a second scan `settleMs` later; only what both
 * found is reported (an ADD or DEL in flight writes its claim and its entry a moment apart).
 */
export async function audit(options: AuditOptions & { settleMs: number; sleep?: (ms: number) => Promise<void> }): Promise<AuditReport> {
  const first = await auditOnce(options);
  if (first.findings.length === 0 || options.settleMs <= 0) return first;
  options.progress(`${first.findings.length} finding(s); reading again in ${options.settleMs} ms to drop calls in flight`);
  await (options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms))))(options.settleMs);
  const second = await auditOnce(options);
  const before = new Set(first.findings.map(findingId));
  return { ...second, findings: second.findings.filter((f) => before.has(findingId(f))) };
}
