import fc from "fast-check";
import { expect, it } from "vitest";
import { RangeExhaustedError } from "./errors.js";
import { formatIp, ipAt } from "./ip.js";
import { createIpam } from "./ipam.js";
import { type AttachmentKey, attachmentKey, formatKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { parseRange } from "./range.js";
import { planReconcile } from "./reconcile-plan.js";
import type { PoolRef } from "./store.js";

// Sticky addresses (DESIGN.md, "Sticky addresses") under random interleavings of ADD, DEL, a pod
// reborn on another node (its old sandbox never DELeted), a late DEL of such a dead sandbox,
// reconciler passes and the clock. After every step, read back from the store: no address held
// by two keys, no key with two addresses (Pool refuses both on read), every live sandbox holds
// exactly one address and it is held (not kept), a reservation never changes pod, and a pod
// reborn while its address was still reserved for it gets that address back.

const range = parseRange({ range: "10.90.0.0/28" });
const ref: PoolRef = { network: "", cidr: range.cidr.text };
const KEEP = 30;
const PODS = ["db/db-0", "db/db-1", "db/db-2", "web/db-0"];

type Step =
  | { kind: "add"; pod: number } // kubelet's ADD for the pod's current UID (a new sandbox if it has none)
  | { kind: "del"; pod: number } // the pod is deleted: its live sandbox DELeted
  | { kind: "reborn"; pod: number } // its node dies: no DEL; the pod object is re-created with a new UID
  | { kind: "late-del"; pod: number } // a dead sandbox's DEL finally arrives
  | { kind: "reconcile" }
  | { kind: "tick"; seconds: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("add" as const), pod: fc.nat(PODS.length - 1) }),
  fc.record({ kind: fc.constant("del" as const), pod: fc.nat(PODS.length - 1) }),
  fc.record({ kind: fc.constant("reborn" as const), pod: fc.nat(PODS.length - 1) }),
  fc.record({ kind: fc.constant("late-del" as const), pod: fc.nat(PODS.length - 1) }),
  fc.record({ kind: fc.constant("reconcile" as const) }),
  fc.record({ kind: fc.constant("tick" as const), seconds: fc.integer({ min: 1, max: 40 }) }),
);

interface PodModel {
  uid: number;
  /** The sandbox of the current UID, once ADDed and until DELeted. */
  live?: AttachmentKey;
  /** Sandboxes that died with their node, never DELeted yet. */
  dead: AttachmentKey[];
  /** The address the pod's last sandbox had. */
  last?: string;
  exists: boolean;
}

async function run(steps: readonly Step[]): Promise<void> {
  const store = createMemoryStore();
  let clock = Date.parse("2026-05-01T00:00:00Z");
  const ipam = createIpam({ store, now: () => new Date(clock) });
  const pods: PodModel[] = PODS.map(() => ({ uid: 1, dead: [], exists: true }));
  const podOfKey = new Map<string, string>();
  let sandboxes = 0;
  for (const s of steps) {
    const p = s.kind === "reconcile" || s.kind === "tick" ? undefined : (pods[s.pod] as PodModel);
    const podRef = s.kind === "reconcile" || s.kind === "tick" ? "" : (PODS[s.pod] as string);
    const before = (await store.readPool(ref))?.pool;
    if (s.kind === "add" && p !== undefined) {
      p.exists = true;
      const key = p.live ?? attachmentKey({ containerId: `sandbox-${++sandboxes}`, ifName: "net1" });
      podOfKey.set(formatKey(key), podRef);
      const uid = `${podRef}#${p.uid}`;
      // reserved for this pod: kept after a DEL, or held for its previous UID by a dead sandbox
      const mine = p.live === undefined ? before?.reservations().find((r) => r.podRef === podRef && r.podUid !== uid) : undefined;
      try {
        const [a] = await ipam.allocate({ ranges: [range], key, podRef, podUid: uid, sticky: KEEP });
        const address = formatIp((a as { address: Parameters<typeof formatIp>[0] }).address);
        if (mine !== undefined) expect(address).toBe(formatIp(ipAt(range.cidr, mine.offset)));
        if (p.live !== undefined) expect(address).toBe(p.last);
        p.live = key;
        p.last = address;
      } catch (error) {
        if (!(error instanceof RangeExhaustedError)) throw error;
        expect(mine).toBeUndefined();
        expect(p.live).toBeUndefined();
      }
    } else if (s.kind === "del" && p?.live !== undefined) {
      expect(await ipam.release({ ranges: [range], key: p.live, sticky: true })).toEqual([]);
      p.live = undefined;
      p.exists = false;
    } else if (s.kind === "reborn" && p !== undefined) {
      if (p.live !== undefined) p.dead.push(p.live);
      p.live = undefined;
      p.uid += 1;
      p.exists = true;
    } else if (s.kind === "late-del" && p !== undefined && p.dead.length > 0) {
      await ipam.release({ ranges: [range], key: p.dead.shift() as AttachmentKey, sticky: true });
    } else if (s.kind === "reconcile") {
      const live = new Map(
        pods.flatMap((m, i) => {
          if (!m.exists) return [];
          const [namespace = "", name = ""] = (PODS[i] as string).split("/");
          const uid = `${PODS[i]}#${m.uid}`;
          return [[`${namespace}/${name}`, { namespace, name, uid, phase: "Pending", evictedByTaintManager: false }] as const];
        }),
      );
      const reservations = (before?.reservations() ?? []).map((reservation) => ({
        pool: ref,
        address: formatIp(ipAt(range.cidr, reservation.offset)),
        reservation,
      }));
      const orphans = planReconcile({ reservations, pods: live, now: new Date(clock), graceMs: 0 }).filter((v) => v.release);
      await ipam.releaseAllIf(
        ref,
        orphans.map((v) => v.observed.reservation),
      );
    } else if (s.kind === "tick") {
      clock += s.seconds * 1000;
    }
    // invariants, read back (Pool.fromReservations refuses two holders of an address or two addresses of a key)
    const pool = (await store.readPool(ref))?.pool;
    const reservations = pool?.reservations() ?? [];
    for (const r of reservations) expect(podOfKey.get(formatKey(r.key))).toBe(r.podRef);
    for (const [i, m] of pods.entries()) {
      if (m.live === undefined) continue;
      const held = pool?.exactly(m.live);
      expect(held?.releasedAt).toBeUndefined();
      expect(held?.podRef).toBe(PODS[i]);
      expect(held === undefined ? undefined : formatIp(ipAt(range.cidr, held.offset))).toBe(m.last);
    }
  }
}

it("sticky: random ADD / DEL / reborn / late DEL / reconcile / clock steps keep every invariant", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 60 }), (steps) => run(steps)),
    { numRuns: 300 },
  );
});
