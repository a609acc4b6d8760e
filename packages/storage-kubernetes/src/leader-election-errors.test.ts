import { InvalidRequestError } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  aborted,
  campaign,
  connect,
  elector,
  LEASE_PATH,
  NS,
  readLease,
  recordingLogger,
  settle,
  until,
} from "../test/leader-election-fixtures.js";
import { type Cluster, clusterTargets, standIn } from "../test/lease-targets.js";
import { createLeaderElector, type LeaderElectionOptions } from "./leader-election.js";

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
