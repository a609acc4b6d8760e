import { hostname } from "node:os";
import { InvalidRequestError } from "@ipamkit/core";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Cluster, clusterTargets, LEASE_NS, standIn } from "../test/lease-targets.js";
import { createLeaderElector, type ElectionLogger, type LeaderElectionOptions, type LeaderElector } from "./leader-election.js";
import { formatMicroTime, parseMicroTime } from "./microtime.js";

/** A logger that keeps each line with pino's level number (20 debug, 30 info, 40 warn). */
function recordingLogger(lines: { level: number; msg: string }[]): ElectionLogger {
  const at = (level: number) => (fields: object | string, message?: string) => {
    lines.push({ level, msg: typeof fields === "string" ? fields : (message ?? "") });
  };
  const logger: ElectionLogger = { debug: at(20), info: at(30), warn: at(40), child: () => logger };
  return logger;
}

const NS = LEASE_NS;
const NAME = "ipamkit-reconciler";
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${NAME}`;
const lease = { group: "coordination.k8s.io", version: "v1", namespace: NS, plural: "leases", name: NAME };
/** Small durations keep the suite fast: the advertised lease is ceil(1.5) = 2 s. */
const FAST = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200, requestTimeoutMs: 1_000 };
const MICRO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

interface LeaseBody {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

let cluster: Cluster;
let kubeConfig: KubeConfig;
let custom: CustomObjectsApi;
const runs: { stop: AbortController; done: Promise<void> }[] = [];

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));

/**
 * Records the timers that storage-kubernetes' `src/leader-election.ts` and `src/leader-lease.ts`
 * create and have neither fired nor been cleared (the global setTimeout is looked up at call
 * time, so replacing it sees the elector's timers).
 */
function trackLeaderTimers() {
  const pending = new Set<ReturnType<typeof setTimeout>>();
  const { setTimeout: realSet, clearTimeout: realClear } = globalThis;
  globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = realSet(() => {
      pending.delete(handle);
      callback(...args);
    }, ms);
    if (/\/src\/leader-(election|lease)\.ts/.test(new Error().stack ?? "")) pending.add(handle);
    return handle;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((handle: ReturnType<typeof setTimeout> | undefined) => {
    if (handle !== undefined) pending.delete(handle);
    realClear(handle);
  }) as typeof clearTimeout;
  restoreTimers = () => Object.assign(globalThis, { setTimeout: realSet, clearTimeout: realClear });
  return pending;
}
let restoreTimers = () => {};

/** The Lease as stored, read raw: its times are the strings the API server holds. */
const readLease = async () => (await custom.getNamespacedCustomObject(lease)) as LeaseBody;

function elector(identity: string, extra: Partial<LeaderElectionOptions> = {}): LeaderElector {
  return createLeaderElector({ kubeConfig, namespace: NS, identity, ...FAST, ...extra });
}

/** Starts `run`, with a `lead` that records its calls and holds leadership until its signal aborts. */
function campaign(e: LeaderElector, lead?: (signal: AbortSignal) => Promise<void>) {
  const signals: AbortSignal[] = [];
  const stop = new AbortController();
  const done = e.run(async (signal) => {
    signals.push(signal);
    await (lead ?? aborted)(signal);
  }, stop.signal);
  runs.push({ stop, done });
  return { signals, stop, done };
}

/** Another instance, played by the test: it holds the Lease and renews it (by its clock) until stopped. */
async function otherHolder(holderIdentity: string, clock = () => new Date()) {
  const write = async () => {
    const time = formatMicroTime(clock());
    const current = (await custom.getNamespacedCustomObject(lease).catch(() => undefined)) as LeaseBody | undefined;
    const spec = { ...current?.spec, holderIdentity, leaseDurationSeconds: 2, renewTime: time };
    if (current?.spec.holderIdentity !== holderIdentity) Object.assign(spec, { acquireTime: time });
    const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: NAME, ...current?.metadata }, spec };
    await custom.replaceNamespacedCustomObject({ ...lease, body });
  };
  const writeUntilDone = async () => {
    // the elector may write between our read and our write (409): read again
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
      }
    }
  };
  await writeUntilDone();
  let renewing = true;
  const loop = (async () => {
    while (renewing) {
      await pause(300);
      if (renewing) await writeUntilDone();
    }
  })();
  return async () => {
    renewing = false;
    await loop;
  };
}

for (const target of clusterTargets()) {
  describe(`leader election on a Lease (${target.name})`, () => {
    let host: Awaited<ReturnType<typeof target.open>>;
    beforeAll(async () => {
      host = await target.open();
    });
    afterAll(async () => {
      await host?.close();
    });
    beforeEach(async () => {
      cluster = await host.cluster();
      kubeConfig = cluster.kubeConfig;
      custom = kubeConfig.makeApiClient(CustomObjectsApi);
    });
    afterEach(async () => {
      restoreTimers();
      for (const run of runs.splice(0)) {
        run.stop.abort();
        await run.done;
      }
      await cluster?.close();
    });

    it("a single elector acquires, leads, renews with 6-digit times and releases on stop", async () => {
      const timers = trackLeaderTimers();
      const e = createLeaderElector({ kubeConfig, namespace: NS, ...FAST }); // default name and identity
      expect(e.identity).toMatch(new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}_[0-9a-f]{8}$`));
      const { signals, stop, done } = campaign(e);
      await until(() => signals.length === 1 && e.isLeader(), "leadership");
      expect(timers.size).toBeGreaterThan(0); // the tracking sees the elector's timers

      const first = await readLease();
      expect(first.spec).toMatchObject({ holderIdentity: e.identity, leaseDurationSeconds: 2, leaseTransitions: 0 });
      expect(first.spec.acquireTime).toMatch(MICRO);
      expect(first.spec.renewTime).toMatch(MICRO);
      await until(async () => (await readLease()).spec.renewTime !== first.spec.renewTime, "a renewal");
      const renewed = await readLease();
      expect(renewed.spec.renewTime).toMatch(MICRO);
      expect(parseMicroTime(renewed.spec.renewTime ?? "")?.getTime()).toBeGreaterThan(
        parseMicroTime(first.spec.renewTime ?? "")?.getTime() ?? 0,
      );
      expect(renewed.spec.acquireTime).toBe(first.spec.acquireTime);
      expect(renewed.spec.holderIdentity).toBe(e.identity);

      stop.abort();
      await done;
      expect(signals[0]?.aborted).toBe(true);
      expect(e.isLeader()).toBe(false);
      expect((await readLease()).spec).toMatchObject({ holderIdentity: "", leaseDurationSeconds: 1, leaseTransitions: 0 });
      expect(timers.size).toBe(0); // no dangling timers once run has resolved
    });

    it("stays passive while another instance renews, and takes over once it stops", async () => {
      // The other's clock is an hour behind: its renewTime looks long expired by our clock. Only the
      // renewals this process observes count, so it must still be respected.
      const stopOther = await otherHolder("other", () => new Date(Date.now() - 3_600_000));
      const e = elector("me", { now: () => new Date(Date.now() + 3_600_000) }); // our lease times come from `now`
      const { signals } = campaign(e);
      await pause(4_500); // three lease durations
      expect(signals).toHaveLength(0);
      expect(e.isLeader()).toBe(false);
      const held = await readLease();
      expect(held.spec.holderIdentity).toBe("other");

      await stopOther();
      await until(() => signals.length === 1 && e.isLeader(), "the takeover", 8_000);
      const taken = await readLease();
      expect(taken.spec.holderIdentity).toBe("me");
      expect(taken.spec.leaseTransitions).toBe((held.spec.leaseTransitions ?? 0) + 1);
      expect(taken.spec.acquireTime).not.toBe(held.spec.acquireTime);
      expect(taken.spec.acquireTime).toMatch(MICRO);
      expect(parseMicroTime(taken.spec.acquireTime ?? "")?.getTime()).toBeGreaterThan(Date.now() + 1_800_000);
    });

    it("two electors: one leads at a time, and a stopped leader hands over at once", async () => {
      // A long lease: a takeover well within it can only come from the release.
      const slow = { leaseDurationMs: 20_000, renewDeadlineMs: 10_000, retryPeriodMs: 200 };
      let active = 0;
      let maxActive = 0;
      const leads: string[] = [];
      const lead = (id: string) => async (signal: AbortSignal) => {
        active += 1;
        maxActive = Math.max(maxActive, active);
        leads.push(id);
        await aborted(signal);
        await pause(50); // winding down still counts as leading
        active -= 1;
      };
      const a = elector("a", slow);
      const b = elector("b", slow);
      const runA = campaign(a, lead("a"));
      const runB = campaign(b, lead("b"));
      await until(() => leads.length === 1, "a leader");
      await pause(1_500);
      expect(leads).toHaveLength(1);
      expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);

      const [leader, leaderRun, follower] = leads[0] === "a" ? [a, runA, b] : [b, runB, a];
      const before = await readLease();
      expect(before.spec.holderIdentity).toBe(leader.identity);
      leaderRun.stop.abort();
      await leaderRun.done;
      await until(() => follower.isLeader(), "the follower's takeover", 5_000);
      expect(leads).toEqual([leader.identity, follower.identity]);
      expect(maxActive).toBe(1);
      const after = await readLease();
      expect(after.spec.holderIdentity).toBe(follower.identity);
      expect(after.spec.leaseTransitions).toBe((before.spec.leaseTransitions ?? 0) + 1);
    });

    it("loses leadership when another holder overwrites the Lease, and campaigns again", async () => {
      // A long renew deadline: the loss within 5 s must come from seeing the other holder.
      const e = elector("me", { leaseDurationMs: 20_000, renewDeadlineMs: 10_000 });
      const { signals } = campaign(e);
      await until(() => e.isLeader(), "leadership");
      const stopIntruder = await otherHolder("intruder");
      await until(() => signals[0]?.aborted === true, "the leadSignal to abort", 5_000);
      expect(e.isLeader()).toBe(false);
      await pause(500);
      expect((await readLease()).spec.holderIdentity).toBe("intruder"); // not cleared by the loser
      expect(signals).toHaveLength(1);

      await stopIntruder();
      await until(() => signals.length === 2 && e.isLeader(), "leadership again after the intruder's lease expired");
    });

    // fault injection needs the stand-in; a real kube-apiserver cannot fail on demand
    if (target.faults)
      it("loses leadership after renewDeadline of failed renewals, and leads again once they succeed", async () => {
        const e = elector("me");
        const { signals } = campaign(e);
        await until(() => e.isLeader(), "leadership");
        const failingSince = Date.now();
        standIn(cluster).failNext({ method: "PUT", pathPrefix: LEASE_PATH, status: 500, times: 12 });
        await until(() => signals[0]?.aborted === true, "the leadSignal to abort", 5_000);
        const lostAfter = Date.now() - failingSince;
        expect(lostAfter).toBeGreaterThanOrEqual(500); // not at the first failure: it waits for the deadline
        expect(e.isLeader()).toBe(false);
        await until(() => signals.length === 2 && e.isLeader(), "leadership after the failures end");
      });

    it("an error thrown by lead is logged, the Lease released, and the campaign resumes", async () => {
      const lines: { level: number; msg: string }[] = [];
      const logger = recordingLogger(lines);
      const e = elector("me", { logger });
      let calls = 0;
      const { signals } = campaign(e, async (signal) => {
        calls += 1;
        if (calls === 1) throw new Error("boom");
        await aborted(signal);
      });
      await until(() => signals.length === 2 && e.isLeader(), "the second lead");
      expect(signals[0]?.aborted).toBe(true);
      // released (holder cleared) and then acquired again: a transition, not a renewal
      expect((await readLease()).spec).toMatchObject({ holderIdentity: "me", leaseTransitions: 1 });
      expect(lines.find((l) => l.msg.startsWith("lead failed"))?.level).toBe(40);
      expect(lines.filter((l) => l.msg === "became leader" && l.level === 30)).toHaveLength(2);
      expect(lines.some((l) => l.msg === "released lease" && l.level === 30)).toBe(true);
    });

    it("refuses invalid options and a second concurrent run", async () => {
      const base = { kubeConfig, namespace: NS };
      const cases: [Partial<LeaderElectionOptions>, RegExp][] = [
        [{ leaseDurationMs: 0 }, /leaseDurationMs/],
        [{ leaseDurationMs: Number.NaN }, /leaseDurationMs/],
        [{ renewDeadlineMs: 15_000 }, /renewDeadlineMs/],
        [{ leaseDurationMs: 5_000 }, /renewDeadlineMs/],
        [{ retryPeriodMs: 10_000 }, /retryPeriodMs/],
        [{ retryPeriodMs: -1 }, /retryPeriodMs/],
        [{ requestTimeoutMs: 0 }, /requestTimeoutMs/],
        [{ namespace: "" }, /namespace/],
        [{ name: "" }, /name/],
        [{ identity: "" }, /identity/],
      ];
      for (const [options, message] of cases) {
        expect(() => createLeaderElector({ ...base, ...options })).toThrow(InvalidRequestError);
        expect(() => createLeaderElector({ ...base, ...options })).toThrow(message);
      }
      const e = elector("me");
      campaign(e);
      await expect(e.run(aborted, new AbortController().signal)).rejects.toThrow(InvalidRequestError);
    });
  });
}
