import { formatKey, isKept, type PoolRef, poolId, type Reservation, type StoredPool } from "@ipamkit/core";
import type { AuditReport } from "./audit.js";
import type { PoolView } from "./inventory.js";
import type { ReleaseResult } from "./release.js";
import { age, percent, table } from "./table.js";

/** One row of `ipamkit pools --json`. */
export function poolJson(p: PoolView) {
  return {
    network: p.ref.network,
    pool: p.ref.cidr,
    used: p.used,
    capacity: Number(p.capacity),
    percent: p.capacity === 0n ? null : Number(((p.used * 100) / Number(p.capacity)).toFixed(1)),
    ...(p.block === undefined ? {} : { node: p.block.node, ...(p.block.range === undefined ? {} : { range: p.block.range }) }),
    ...(p.error === undefined ? {} : { error: p.error.message.split("\n")[0] }),
  };
}

const row = (p: PoolView, cidr: string) => [
  p.ref.network === "" ? "-" : p.ref.network,
  cidr,
  p.error === undefined ? String(p.used) : "?",
  String(p.capacity),
  p.error === undefined ? percent(p.used, p.capacity) : "unreadable",
  p.block?.node ?? "",
];

/** The pools table; the blocks of a configured range under a row for the range (its sum). */
export function poolsTable(pools: readonly PoolView[]): string {
  const rows: string[][] = [];
  const grouped = new Map<string, PoolView[]>();
  for (const p of pools) {
    if (p.block?.range === undefined) continue;
    const k = `${p.ref.network}\n${p.block.range}`;
    grouped.set(k, [...(grouped.get(k) ?? []), p]);
  }
  const done = new Set<string>();
  for (const p of pools) {
    const range = p.block?.range;
    if (range === undefined) {
      rows.push(row(p, p.ref.cidr));
      continue;
    }
    const k = `${p.ref.network}\n${range}`;
    if (done.has(k)) continue;
    done.add(k);
    const blocks = grouped.get(k) ?? [];
    const used = blocks.reduce((n, b) => n + b.used, 0);
    const capacity = blocks.reduce((n, b) => n + b.capacity, 0n);
    const network = p.ref.network === "" ? "-" : p.ref.network;
    rows.push([network, range, String(used), String(capacity), percent(used, capacity), `${blocks.length} block(s) claimed`]);
    for (const b of blocks) rows.push(row(b, `  ${b.ref.cidr}`));
  }
  return table(["NETWORK", "POOL", "USED", "CAPACITY", "USE%", "NODE"], rows);
}

/** One pool's reservations. */
export function showJson(ref: PoolRef, stored: StoredPool, address: (offset: bigint) => string) {
  return {
    network: ref.network,
    pool: ref.cidr,
    reservations: stored.pool.reservations().map((r) => ({
      address: address(r.offset),
      key: formatKey(r.key),
      ...(r.podRef === undefined ? {} : { podRef: r.podRef }),
      ...(r.podUid === undefined ? {} : { podUid: r.podUid }),
      ...(r.createdAt === undefined ? {} : { createdAt: r.createdAt }),
      state: state(r),
      ...(r.releasedAt === undefined ? {} : { releasedAt: r.releasedAt }),
    })),
  };
}

/** "held" by its sandbox, or "kept" for its pod after a DEL (sticky addresses). */
const state = (r: Reservation): "held" | "kept" => (isKept(r) ? "kept" : "held");

export function showTable(ref: PoolRef, stored: StoredPool, address: (offset: bigint) => string, now: Date): string {
  const rows = stored.pool
    .reservations()
    .map((r) => [
      address(r.offset),
      formatKey(r.key),
      r.podRef ?? "-",
      age(r.createdAt, now),
      isKept(r) ? `kept ${age(r.releasedAt, now)}` : "held",
    ]);
  return `pool ${poolId(ref)}: ${rows.length} reservation(s)\n${table(["ADDRESS", "KEY", "POD", "AGE", "STATE"], rows)}`;
}

export function auditText(report: AuditReport, failing: number, podsSkipped = "no kubeconfig"): string {
  const checks = `${report.pools} pool(s), ${report.reservations} reservation(s); claims ${report.checked.claims ? "checked" : "not checked"}, pods ${report.checked.pods ? "checked" : `not checked (${podsSkipped})`}`;
  if (report.findings.length === 0) return `clean: ${checks}`;
  const rows = report.findings.map((f) => [
    f.kind,
    f.network === "" ? "-" : f.network,
    f.address ?? "-",
    f.pool ?? "-",
    f.key ?? "-",
    f.podRef ?? "-",
    f.detail,
  ]);
  return `${table(["FINDING", "NETWORK", "ADDRESS", "POOL", "KEY", "POD", "DETAIL"], rows)}\n${report.findings.length} finding(s), ${failing} failing: ${checks}`;
}

export function releaseText(results: readonly ReleaseResult[], dryRun: boolean): string {
  if (results.length === 0) return "nothing held: no reservation matches";
  const rows = results.map((r) => [r.outcome, r.pool, r.address, r.key, r.podRef ?? "-"]);
  return `${table(["OUTCOME", "POOL", "ADDRESS", "KEY", "POD"], rows)}${dryRun ? "\ndry run: nothing was changed" : ""}`;
}
