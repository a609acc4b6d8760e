import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  aborted,
  campaign,
  connect,
  elector,
  FAST,
  MICRO,
  NS,
  otherHolder,
  pause,
  readLease,
  settle,
  trackLeaderTimers,
  until,
} from "../test/leader-election-fixtures.js";
import { type Cluster, clusterTargets } from "../test/lease-targets.js";
import { createLeaderElector } from "./leader-election.js";
import { parseMicroTime } from "./microtime.js";

let cluster: Cluster;
let kubeConfig: KubeConfig;

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
      connect(kubeConfig);
    });
    afterEach(async () => {
      await settle();
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
  });
}
