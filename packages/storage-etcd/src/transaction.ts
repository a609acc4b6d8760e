import {
  type ClaimRef,
  claimId,
  claimToRecord,
  formatKey,
  type Pool,
  type PoolRef,
  poolId,
  type Reservation,
  reservationToRecord,
  StoreConflictError,
  StoreRejectedError,
  type StoreWrite,
  type Version,
} from "@ipamkit/core";
import type { DeleteBuilder, PutBuilder } from "etcd3";
import { STORE_NAME } from "./errors.js";
import type { EtcdConnection } from "./etcd-client.js";
import type { Layout } from "./layout.js";
import { metaValue, type PoolReads } from "./pool-reads.js";

type Compare = { key: string; column: "Create" | "Mod" | "Value"; value: string | number };

/** What one transaction is made of, filled step by step. */
interface Txn {
  compares: Compare[];
  ops: (PutBuilder | DeleteBuilder)[];
  /** Meta keys already put: etcd refuses a key twice in one transaction. */
  metas: Set<string>;
}

const ipValue = (r: Reservation) => JSON.stringify(reservationToRecord(r));

const versionCompare = (key: string, expected: Version | undefined): Compare =>
  expected === undefined ? { key, column: "Create", value: 0 } : { key, column: "Mod", value: expected };

/**
 * One key/<containerId/ifName> row per key: a container holds at most one entry without ifname
 * here (Whereabouts' IPPools may hold several). Refused, rather than written as a pool whose
 * index cannot be read back.
 */
function refuseSeveralLegacy(ref: PoolRef, pool: Pool): void {
  const legacy = new Set<string>();
  for (const r of pool) {
    if (r.key.ifName !== "") continue;
    if (legacy.has(r.key.containerId))
      throw new StoreRejectedError(poolId(ref), `container ${r.key.containerId} holds two entries without ifname; this store keeps one`, {
        component: STORE_NAME,
      });
    legacy.add(r.key.containerId);
  }
}

/** Writes as etcd transactions guarded by mod revisions (or create revision 0 for create-if-absent). */
export class Transactions {
  constructor(
    private readonly etcd: EtcdConnection,
    private readonly keys: Layout,
    private readonly reads: PoolReads,
  ) {}

  /** One transaction for all steps; every compare must hold. Returns each step's new version. */
  async transact(steps: readonly StoreWrite[], operation: string): Promise<Version[]> {
    const txn: Txn = { compares: [], ops: [], metas: new Set() };
    for (const w of steps) await this.plan(w, txn);
    // Every step compares at least one key, so no compare means nothing to do.
    const [first, ...rest] = txn.compares;
    if (first === undefined) return [];
    const { client } = this.etcd;
    const builder = client.if(first.key, first.column, "==", first.value);
    for (const c of rest) builder.and(c.key, c.column, "==", c.value);
    const result = await this.etcd.call(operation, () => builder.then(...txn.ops).commit(), true);
    if (!result.succeeded) {
      const object = steps.map((w) => (w.kind.endsWith("claim") ? claimId(w.ref as ClaimRef) : poolId(w.ref as PoolRef))).join(" + ");
      throw new StoreConflictError(object, { component: STORE_NAME });
    }
    const revision = result.header.revision;
    for (const w of steps) this.reads.foldOwnStep(w);
    return steps.map((w) => (w.kind === "check-pool" ? (w.expected ?? "") : w.kind === "delete-claim" ? "" : revision));
  }

  private putMeta(ref: PoolRef, txn: Txn): void {
    const key = this.keys.meta(ref);
    if (txn.metas.has(key)) return;
    txn.metas.add(key);
    txn.ops.push(this.etcd.client.put(key).value(metaValue(ref)));
  }

  /** Compares and operations of one step ("pool" steps need the current entries, read before). */
  private async plan(w: StoreWrite, txn: Txn): Promise<void> {
    const { client } = this.etcd;
    const { keys } = this;
    switch (w.kind) {
      case "claim":
        txn.compares.push(versionCompare(keys.claim(w.ref), w.expected));
        txn.ops.push(client.put(keys.claim(w.ref)).value(JSON.stringify(claimToRecord(w.claim))));
        return;
      case "delete-claim":
        txn.compares.push(versionCompare(keys.claim(w.ref), w.expected));
        txn.ops.push(client.delete().key(keys.claim(w.ref)));
        return;
      case "check-pool":
        txn.compares.push(versionCompare(keys.meta(w.ref), w.expected));
        return;
      case "reserve":
        this.planReserve(w, txn);
        return;
      case "unreserve": {
        const r = w.reservation;
        const revision = this.reads.seen.get(r);
        txn.compares.push(
          revision === undefined
            ? { key: keys.ip(w.ref, r.offset), column: "Value", value: ipValue(r) }
            : { key: keys.ip(w.ref, r.offset), column: "Mod", value: revision },
        );
        txn.ops.push(client.put(keys.ip(w.ref, r.offset)).value(""), client.delete().key(keys.key(w.ref, formatKey(r.key))));
        this.putMeta(w.ref, txn);
        return;
      }
      case "pool":
        await this.planPool(w, txn);
        return;
    }
  }

  private planReserve(w: Extract<StoreWrite, { kind: "reserve" }>, txn: Txn): void {
    const { client } = this.etcd;
    const { keys } = this;
    const r = w.reservation;
    const released = this.reads.released(w.ref, r.offset);
    txn.compares.push(
      released
        ? { key: keys.ip(w.ref, r.offset), column: "Value", value: "" }
        : { key: keys.ip(w.ref, r.offset), column: "Create", value: 0 },
      { key: keys.key(w.ref, formatKey(r.key)), column: "Create", value: 0 },
    );
    txn.ops.push(
      client.put(keys.ip(w.ref, r.offset)).value(ipValue(r)),
      client.put(keys.key(w.ref, formatKey(r.key))).value(r.offset.toString()),
    );
    this.putMeta(w.ref, txn);
    if (w.lastOffset !== undefined) txn.ops.push(client.put(keys.cursor(w.ref)).value(w.lastOffset.toString()));
  }

  /** Strict: the whole pool must be as read (meta revision); then write only the difference. */
  private async planPool(w: Extract<StoreWrite, { kind: "pool" }>, txn: Txn): Promise<void> {
    const { client } = this.etcd;
    const { keys } = this;
    refuseSeveralLegacy(w.ref, w.pool);
    const current = await this.reads.readFull(w.ref);
    if (current?.version !== w.expected) throw new StoreConflictError(poolId(w.ref), { component: STORE_NAME });
    txn.compares.push(versionCompare(keys.meta(w.ref), w.expected));
    const before = new Map((current?.pool.reservations() ?? []).map((r) => [r.offset, r]));
    const after = new Map(w.pool.reservations().map((r) => [r.offset, r]));
    // One final operation per etcd key (etcd rejects a key twice in one transaction): a value to
    // put, or null to delete. Removals first, so an attachment that moves address is put, not deleted.
    const final = new Map<string, string | null>();
    for (const old of before.values()) {
      const next = after.get(old.offset);
      if (next !== undefined && ipValue(next) === ipValue(old)) continue;
      if (next === undefined) final.set(keys.ip(w.ref, old.offset), "");
      final.set(keys.key(w.ref, formatKey(old.key)), null);
    }
    for (const r of after.values()) {
      const old = before.get(r.offset);
      if (old !== undefined && ipValue(old) === ipValue(r)) continue;
      final.set(keys.ip(w.ref, r.offset), ipValue(r));
      final.set(keys.key(w.ref, formatKey(r.key)), r.offset.toString());
    }
    for (const [key, value] of final) txn.ops.push(value === null ? client.delete().key(key) : client.put(key).value(value));
    this.putMeta(w.ref, txn);
    txn.ops.push(client.put(keys.cursor(w.ref)).value(w.pool.lastOffset === undefined ? "" : w.pool.lastOffset.toString()));
  }
}
