import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { attachmentKey } from "./key.js";
import { auditClaims, judgeReservation, type ObservedReservation, type PodFacts, planReconcile, podRefOf } from "./reconcile-plan.js";

const NOW = new Date("2026-12-03T06:00:00Z");
const GRACE = 5 * 60_000;
const pool = { network: "", cidr: "10.1.0.0/24" };
const old = new Date(NOW.getTime() - 3_600_000).toISOString();

function observed(
  offset: number,
  fields: { id?: string; ifName?: string; podRef?: string; podUid?: string; createdAt?: string } = {},
): ObservedReservation {
  return {
    pool,
    address: `10.1.0.${offset}`,
    reservation: {
      offset: BigInt(offset),
      key: attachmentKey({ containerId: fields.id ?? `c${offset}`, ifName: fields.ifName ?? "net1" }, { allowLegacy: true }),
      ...("podRef" in fields ? (fields.podRef === undefined ? {} : { podRef: fields.podRef }) : { podRef: "ns/sts-0" }),
      ...(fields.podUid === undefined ? {} : { podUid: fields.podUid }),
      createdAt: "createdAt" in fields ? fields.createdAt : old,
    },
  };
}

function pod(fields: Partial<PodFacts> = {}): PodFacts {
  return { namespace: "ns", name: "sts-0", uid: "uid-new", phase: "Running", evictedByTaintManager: false, ...fields };
}

const judge = (o: ObservedReservation, p: PodFacts | undefined) => judgeReservation(o, p, { now: NOW, graceMs: GRACE });

describe("judgeReservation", () => {
  it("releases when the pod is gone, and keeps a reservation without podRef", () => {
    expect(judge(observed(5), undefined)).toMatchObject({ release: true, reason: "pod-missing" });
    expect(judge(observed(5, { podRef: undefined }), undefined)).toMatchObject({ release: false, reason: "no-pod-ref" });
  });

  it("keeps anything younger than the grace period, even without a pod", () => {
    const young = new Date(NOW.getTime() - GRACE + 1000).toISOString();
    expect(judge(observed(5, { createdAt: young }), undefined)).toMatchObject({ release: false, reason: "within-grace" });
    const justOld = new Date(NOW.getTime() - GRACE).toISOString();
    expect(judge(observed(5, { createdAt: justOld }), undefined)).toMatchObject({ release: true });
  });

  it("an unknown or unparsable creation time gets no grace", () => {
    expect(judge(observed(5, { createdAt: undefined }), undefined).release).toBe(true);
    expect(judge(observed(5, { createdAt: "yesterday-ish" }), undefined).release).toBe(true);
  });

  it("releases when the recorded pod UID differs from the live pod's, keeps it when equal", () => {
    expect(judge(observed(5, { podUid: "uid-old" }), pod())).toMatchObject({ release: true, reason: "pod-uid-changed" });
    expect(judge(observed(5, { podUid: "uid-new" }), pod())).toMatchObject({ release: false });
  });

  it("releases for terminal and taint-evicted pods; Pending keeps, Unknown without status keeps", () => {
    expect(judge(observed(5), pod({ phase: "Succeeded" }))).toMatchObject({ release: true, reason: "pod-terminal" });
    expect(judge(observed(5), pod({ phase: "Failed" }))).toMatchObject({ release: true, reason: "pod-terminal" });
    expect(judge(observed(5), pod({ evictedByTaintManager: true }))).toMatchObject({ release: true, reason: "pod-evicted" });
    const stale = [{ interface: "net1", ips: ["10.1.0.9"] }];
    expect(judge(observed(5), pod({ phase: "Pending", networkStatus: stale }))).toMatchObject({ release: false, reason: "pod-pending" });
    expect(judge(observed(5), pod({ phase: "Unknown" }))).toMatchObject({ release: false, reason: "no-network-status" });
  });

  it("uses the network-status entry of the reservation's interface", () => {
    const status = [
      { interface: "eth0", ips: ["10.244.0.7"], default: true },
      { interface: "net1", ips: ["10.1.0.9", "fd00::9"] },
    ];
    expect(judge(observed(9), pod({ networkStatus: status }))).toMatchObject({ release: false, reason: "live" });
    expect(judge(observed(5), pod({ networkStatus: status }))).toMatchObject({ release: true, reason: "ip-not-in-network-status" });
    // another interface's entry says nothing about net2
    expect(judge(observed(5, { ifName: "net2" }), pod({ networkStatus: status }))).toMatchObject({
      release: false,
      reason: "network-status-silent",
    });
    expect(judge(observed(5), pod({ networkStatus: [] }))).toMatchObject({ release: false, reason: "network-status-silent" });
    expect(judge(observed(5), pod())).toMatchObject({ release: false, reason: "no-network-status" });
  });

  it("the default network's entry counts (whereabouts#638)", () => {
    const status = [{ interface: "net1", ips: ["10.1.0.5"], default: true }];
    expect(judge(observed(5), pod({ networkStatus: status }))).toMatchObject({ release: false, reason: "live" });
  });

  it("a legacy reservation without ifname is judged by the entries listing an address of its pool", () => {
    const status = [
      { interface: "net1", ips: ["10.1.0.9"] },
      { interface: "net2", ips: ["192.168.0.5"] },
    ];
    expect(judge(observed(9, { ifName: "" }), pod({ networkStatus: status })).reason).toBe("live");
    expect(judge(observed(5, { ifName: "" }), pod({ networkStatus: status })).reason).toBe("ip-not-in-network-status");
    expect(judge(observed(5, { ifName: "" }), pod({ networkStatus: [{ interface: "net2", ips: ["192.168.0.5"] }] })).reason).toBe(
      "network-status-silent",
    );
  });
});

describe("planReconcile", () => {
  it("the seed: a pod reborn under the same name loses only its stale reservation, in every input order", () => {
    const stale = observed(5, { id: "sandbox-dead", podUid: "uid-old" });
    const live = observed(6, { id: "sandbox-new", podUid: "uid-new" });
    const other = observed(7, { id: "other", podRef: "ns/web-1", podUid: "uid-web" });
    const pods = new Map<string, PodFacts>([
      ["ns/sts-0", pod({ networkStatus: [{ interface: "net1", ips: ["10.1.0.6"] }] })],
      ["ns/web-1", pod({ name: "web-1", uid: "uid-web", networkStatus: [{ interface: "net1", ips: ["10.1.0.7"] }] })],
    ]);
    fc.assert(
      fc.property(fc.shuffledSubarray([stale, live, other], { minLength: 3, maxLength: 3 }), (reservations) => {
        const plan = planReconcile({ reservations, pods, now: NOW, graceMs: GRACE });
        expect(plan.map((v) => [v.observed.address, v.release, v.reason])).toEqual([
          ["10.1.0.5", true, "pod-uid-changed"],
          ["10.1.0.6", false, "live"],
          ["10.1.0.7", false, "live"],
        ]);
      }),
    );
  });

  it("Whereabouts-format (no UID): liveness comes from the annotation", () => {
    const stale = observed(5, { id: "sandbox-dead" });
    const live = observed(6, { id: "sandbox-new" });
    const pods = new Map([["ns/sts-0", pod({ networkStatus: [{ interface: "net1", ips: ["10.1.0.6"] }] })]]);
    for (const reservations of [
      [stale, live],
      [live, stale],
    ]) {
      const plan = planReconcile({ reservations, pods, now: NOW, graceMs: GRACE });
      expect(plan.filter((v) => v.release).map((v) => v.observed.reservation.key.containerId)).toEqual(["sandbox-dead"]);
    }
  });

  it("every verdict is the one its reservation gets alone (no order or neighbour effects)", () => {
    const arbObserved = fc.record({
      offset: fc.integer({ min: 1, max: 40 }),
      id: fc.constantFrom("a", "b", "c", "d"),
      ifName: fc.constantFrom("net1", "net2", ""),
      podRef: fc.constantFrom("ns/sts-0", "ns/sts-1", undefined),
      podUid: fc.constantFrom("uid-new", "uid-old", undefined),
      young: fc.boolean(),
    });
    const arbPod = fc.record({
      uid: fc.constantFrom("uid-new", "uid-old"),
      phase: fc.constantFrom("Pending", "Running", "Succeeded", "Failed", "Unknown"),
      evictedByTaintManager: fc.boolean(),
      ips: fc.option(fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 3 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(arbObserved, { maxLength: 12, selector: (s) => s.offset }),
        fc.option(arbPod, { nil: undefined }),
        (specs, podSpec) => {
          const reservations = specs.map((s) => observed(s.offset, { ...s, createdAt: s.young ? NOW.toISOString() : old }));
          const pods = new Map<string, PodFacts>();
          if (podSpec !== undefined) {
            const networkStatus =
              podSpec.ips === undefined ? undefined : [{ interface: "net1", ips: podSpec.ips.map((i) => `10.1.0.${i}`) }];
            const p = pod({ ...podSpec, ...(networkStatus === undefined ? {} : { networkStatus }) });
            pods.set(podRefOf(p), p);
          }
          const plan = planReconcile({ reservations, pods, now: NOW, graceMs: GRACE });
          const reversed = planReconcile({ reservations: [...reservations].reverse(), pods, now: NOW, graceMs: GRACE });
          expect(plan.map((v) => [v.observed.address, v.release])).toEqual(reversed.map((v) => [v.observed.address, v.release]));
          for (const v of plan) {
            const alone = judge(v.observed, pods.get(v.observed.reservation.podRef ?? ""));
            expect(v.release).toBe(alone.release);
            if (v.observed.reservation.createdAt === NOW.toISOString() && v.observed.reservation.podRef !== undefined)
              expect(v.release).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("auditClaims", () => {
  const claimOf = (o: ObservedReservation) => ({ pool: o.pool, key: o.reservation.key, podRef: o.reservation.podRef ?? "" });
  const scanned = (address: string, claim: ReturnType<typeof claimOf>, version = "1") => ({
    ref: { network: "", address },
    stored: { claim, version },
  });

  it("finds records no entry backs, records naming another entry, and entries past the grace period without a record", () => {
    const a = observed(1);
    const b = observed(2);
    const missing = observed(3);
    const young = observed(4, { createdAt: new Date(NOW.getTime() - 1_000).toISOString() });
    const whereabouts = observed(5, { createdAt: undefined });
    const audit = auditClaims({
      reservations: [a, b, missing, young, whereabouts],
      claims: [
        scanned("10.1.0.1", claimOf(a)),
        scanned("10.1.0.2", { ...claimOf(b), key: attachmentKey({ containerId: "other", ifName: "net1" }) }),
        scanned("10.1.0.9", claimOf(observed(9))),
      ],
      now: NOW,
      graceMs: GRACE,
    });
    expect(audit.findings.map((f) => [f.ref.address, f.kind])).toEqual([
      ["10.1.0.2", "claim-names-other-entry"],
      ["10.1.0.3", "entry-without-claim"],
      ["10.1.0.5", "entry-without-claim"],
      ["10.1.0.9", "claim-without-entry"],
    ]);
    expect(audit.young).toEqual([young]);
    expect(audit.findings[0]?.detail).toBe("it names 10.1.0.0/24 other/net1; 10.1.0.0/24 c2/net1 holds 10.1.0.2");
  });

  it("a record naming another pool than the one holding the address does not match, nor one with another podRef", () => {
    const a = observed(1);
    const otherPool = { ...claimOf(a), pool: { network: "", cidr: "10.1.0.0/16" } };
    const otherPod = { ...claimOf(a), podRef: "ns/else" };
    for (const claim of [otherPool, otherPod]) {
      const audit = auditClaims({ reservations: [a], claims: [scanned("10.1.0.1", claim)], now: NOW, graceMs: GRACE });
      expect(audit.findings.map((f) => f.kind)).toEqual(["claim-names-other-entry"]);
    }
  });
});
