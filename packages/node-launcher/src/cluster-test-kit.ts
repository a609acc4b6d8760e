import { expect } from "vitest";
import type { Cluster } from "./cluster.js";
import { type ClusterReport, checkCluster } from "./cluster-checks.js";

// Shared by the cluster test files (cluster.test.ts, cluster-day2.test.ts).

/** Asserts 0 held twice and network-status, IPPools and ORIPs agreeing both ways; returns the report. */
export async function expectConsistent(cluster: Cluster): Promise<ClusterReport> {
  const report = await checkCluster(cluster);
  expect(report.heldTwice).toEqual([]);
  expect(report.keysWithTwo).toEqual([]);
  expect(report.statusTwice).toEqual([]);
  expect(report.statusWithoutEntry).toEqual([]);
  expect(report.entriesWithoutPod).toEqual([]);
  expect(report.reservationsWithoutEntry).toEqual([]);
  return report;
}
