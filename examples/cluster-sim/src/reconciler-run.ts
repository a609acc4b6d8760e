import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { reconcileOnce } from "@ipamkit/reconciler";
import { createKubernetesPodSource } from "@ipamkit/storage-kubernetes";
import { type Cluster, POOL_NAMESPACE } from "./cluster.js";

/** The reconciler program as deployed (examples/cron-reconciler, built). */
export const RECONCILER = join(import.meta.dirname, "..", "..", "cron-reconciler", "dist", "main.js");

/** One reconciler pass: what it released, its failures, and (run as a program) its process's CPU seconds. */
export interface ReconcileRun {
  released: number;
  failures: string[];
  cpu?: number;
}

/** How the power-cycle's reconciler runs: `program` in a process of its own, as deployed; `in-process` inside the simulation. */
export type ReconcilerMode = "program" | "in-process";

/** The power-cycle's reconciler pass for `mode`: the program, or in-process on `store`. */
export function reconcilerFor(mode: ReconcilerMode, cluster: Cluster, store: IpamStore): () => Promise<ReconcileRun> {
  return () => (mode === "program" ? reconcileAsProgram(cluster) : reconcileInProcess(cluster, store));
}

/** One pass of `@ipamkit/reconciler` inside this process, on `store` (grace 0). */
export async function reconcileInProcess(cluster: Cluster, store: IpamStore): Promise<ReconcileRun> {
  const pods = createKubernetesPodSource({ kubeConfig: cluster.kubeConfig });
  try {
    const report = await reconcileOnce({ store, pods, graceMs: 0 });
    return { released: report.released.length, failures: report.failed.map((f) => f.error.message) };
  } finally {
    pods.close();
  }
}

/** The store flags of the reconciler program for the cluster's backend. */
function storeArgs(cluster: Cluster): string[] {
  if (cluster.kind === "etcd") return ["--datastore", "etcd", "--etcd-endpoints", cluster.etcd?.endpoint ?? ""];
  if (cluster.kind === "file") return ["--datastore", "file", "--data-dir", join(cluster.dir, "store")];
  return ["--namespace", POOL_NAMESPACE];
}

/**
 * One pass of the reconciler program (`--once --grace 0`) in a process of its own, as a cluster
 * runs it, logging at info (a line per release) to a file. It runs under bash, whose `times`
 * gives the program's exact CPU (`cpu`, seconds): the simulation counts it as its own, where the
 * in-process pass was counted, not as a CNI process's.
 */
export async function reconcileAsProgram(cluster: Cluster): Promise<ReconcileRun & { cpu: number }> {
  const log = join(cluster.dir, `reconciler-${Date.now()}.log`);
  const timesFile = `${log}.times`;
  const out = openSync(log, "w");
  const args = ["--once", "--grace", "0", "--kubeconfig", cluster.kubeconfigPath, ...storeArgs(cluster)];
  let stderr = "";
  let code: number;
  try {
    code = await new Promise<number>((resolve, reject) => {
      // the Node that runs the simulation, not whichever is first on PATH
      const child = spawn("bash", ["-c", '"$NODE" "$@"; rc=$?; times > "$TIMES_FILE"; exit $rc', "bash", RECONCILER, ...args], {
        stdio: ["ignore", out, "pipe"],
        env: { PATH: process.env.PATH ?? "", NODE: process.execPath, TIMES_FILE: timesFile },
      });
      child.stderr?.on("data", (chunk) => {
        stderr += chunk;
      });
      child.on("error", reject);
      child.on("close", (exit) => resolve(exit ?? 1));
    });
  } finally {
    closeSync(out);
  }
  const cpu = childCpu(readFileSync(timesFile, "utf8"));
  const lines = readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"));
  const entries = lines.map((l) => JSON.parse(l) as { msg?: string; released?: number; err?: { message?: string } });
  const summary = [...entries].reverse().find((e) => e.msg === "reconcile finished");
  const failures = entries.filter((e) => e.msg === "reconcile failure").map((e) => e.err?.message ?? "failure");
  if (summary === undefined || code !== 0)
    failures.push(`reconciler exited ${code}: ${stderr.trim() || entries.at(-1)?.msg || "no summary line"}`);
  return { released: summary?.released ?? 0, failures, cpu };
}

/** The children's user + system seconds from bash's `times` (its second line: `0m1.234s 0m0.321s`). */
export function childCpu(times: string): number {
  const line = times.trim().split("\n")[1] ?? "";
  const seconds = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  if (seconds.length !== 2) throw new Error(`bash times: unexpected output ${JSON.stringify(times)}`);
  return (seconds[0] ?? 0) + (seconds[1] ?? 0);
}
