/**
 * The input of reconcile.bench.ts and its measuring helpers: deterministic reservations and pods
 * (container IDs, UUID-shaped pod UIDs, network-status) and the planning input with its pod fates.
 */
import {
  attachmentKey,
  type Cidr,
  formatIp,
  ipAt,
  type NetworkStatusEntry,
  type ObservedReservation,
  type PodFacts,
  type PoolRef,
  parseCidr,
  type Reservation,
} from "@ipamkit/core";
import { measure, median, type Sample } from "./measure.js";

const HOUR_AGO = new Date(Date.now() - 3_600_000).toISOString();

// ---------------------------------------------------------------------------------------------
// Measuring

/** One warm-up call, then `runs` measured ones; the medians of CPU and wall time, and the last value. */
export async function medianOf<T>(runs: number, run: () => T | Promise<T>): Promise<Sample & { value: T }> {
  await run();
  const samples: (Sample & { value: T })[] = [];
  for (let i = 0; i < runs; i++) samples.push(await measure(run));
  const last = samples[samples.length - 1] as Sample & { value: T };
  return { value: last.value, cpu: median(samples.map((s) => s.cpu)), wall: median(samples.map((s) => s.wall)) };
}

export function check(ok: boolean, message: string): void {
  if (!ok) throw new Error(`bench sanity check failed: ${message}`);
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32), so every run builds the same input. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
/** A container ID as container runtimes write them: 64 hex digits. */
export const containerId = (n: number) => hex(n, 64);
/** A UUID-shaped pod UID. */
export const fakeUid = (n: number) => `${hex(n, 8)}-4d1a-4c3b-9e6f-${hex(n * 7919, 12).slice(-12)}`;

export function networkStatus(net1: string[]): NetworkStatusEntry[] {
  return [
    { name: "cbr0", interface: "eth0", ips: ["10.244.1.9"], default: true },
    { name: "ns/macvlan", interface: "net1", ips: net1 },
  ];
}

export function reservation(n: number, offset: bigint, podRef: string, podUid: string): Reservation {
  return { offset, key: attachmentKey({ containerId: containerId(n), ifName: "net1" }), podRef, podUid, createdAt: HOUR_AGO };
}

// ---------------------------------------------------------------------------------------------
// 1. Planning input

/** What happened to the pod of a reservation; the first four make it an orphan. */
export type Fate = "live" | "uid-changed" | "missing" | "terminal" | "ip-not-listed" | "pending";
const ORPHANING: ReadonlySet<Fate> = new Set(["uid-changed", "missing", "terminal", "ip-not-listed"]);
const DEAD_FATES: Fate[] = ["uid-changed", "missing", "terminal", "ip-not-listed", "pending"];

export interface PlanningInput {
  reservations: ObservedReservation[];
  pods: Map<string, PodFacts>;
  fates: Record<Fate, number>;
  orphans: number;
}

/** Pool p of the planning input: every fourth is an IPv6 /64, the others IPv4 /22s. */
export function planningPool(p: number): Cidr {
  return parseCidr(p % 4 === 3 ? `fd00:0:0:${hex(p, 4)}::/64` : `10.${p}.0.0/22`);
}

/** The pod of reservation n as its fate has it (undefined: no such pod). */
export function podFor(n: number, fate: Fate, address: string, uid: string, rand: () => number): PodFacts | undefined {
  const namespace = `team-${n % 40}`;
  const pod: PodFacts = {
    namespace,
    name: `app-${n.toString(36)}`,
    uid,
    phase: "Running",
    evictedByTaintManager: false,
    networkStatus: networkStatus([address]),
  };
  switch (fate) {
    case "live":
      return pod;
    case "missing":
      return undefined;
    case "uid-changed":
      return { ...pod, uid: fakeUid(n + 10_000_000) };
    case "terminal":
      return { ...pod, phase: rand() < 0.5 ? "Succeeded" : "Failed" };
    case "ip-not-listed":
      return { ...pod, networkStatus: networkStatus(["10.255.255.1"]) };
    case "pending":
      return { ...pod, phase: "Pending", networkStatus: networkStatus([]) };
  }
}

export function planningInput(pools: number, perPool: number): PlanningInput {
  const rand = random(42);
  const input: PlanningInput = {
    reservations: [],
    pods: new Map(),
    fates: { live: 0, "uid-changed": 0, missing: 0, terminal: 0, "ip-not-listed": 0, pending: 0 },
    orphans: 0,
  };
  for (let p = 0; p < pools; p++) {
    const cidr = planningPool(p);
    const pool: PoolRef = { network: "", cidr: cidr.text };
    for (let i = 0; i < perPool; i++) {
      const n = p * perPool + i;
      const offset = BigInt(i + 1);
      const address = formatIp(ipAt(cidr, offset));
      const uid = fakeUid(n);
      const podRef = `team-${n % 40}/app-${n.toString(36)}`;
      // ~90 % live; the other ~10 % split evenly among the five other fates
      const fate: Fate = rand() < 0.9 ? "live" : (DEAD_FATES[Math.floor(rand() * DEAD_FATES.length)] as Fate);
      input.fates[fate]++;
      if (ORPHANING.has(fate)) input.orphans++;
      input.reservations.push({ pool, address, reservation: reservation(n, offset, podRef, uid) });
      const pod = podFor(n, fate, address, uid, rand);
      if (pod !== undefined) input.pods.set(podRef, pod);
    }
  }
  // pods without a reservation (not on the secondary network), so that there are as many pods as reservations
  for (let n = pools * perPool; input.pods.size < pools * perPool; n++) {
    const pod = podFor(n, "live", "", fakeUid(n), rand) as PodFacts;
    input.pods.set(`${pod.namespace}/${pod.name}`, { ...pod, networkStatus: networkStatus([]).slice(0, 1) });
  }
  return input;
}
