import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import type { ClusterBinaries } from "./cluster-binaries.js";
import { type Daemon, startDaemon } from "./processes.js";

/**
 * The controllers a cluster of these tests needs, by kube-controller-manager's names: node
 * lifecycle (NotReady and its taints), StatefulSet, DaemonSet (ipamkit's agent pods), Deployment
 * and ReplicaSet, the garbage collector (what a deleted owner leaves), the pod GC, the
 * ServiceAccount and root CA publisher (a pod's projected token), and taint eviction.
 */
export const CONTROLLERS = [
  "node-lifecycle-controller",
  "taint-eviction-controller",
  "statefulset-controller",
  "daemonset-controller",
  "deployment-controller",
  "replicaset-controller",
  "garbage-collector-controller",
  "pod-garbage-collector-controller",
  "serviceaccount-controller",
  "root-ca-certificate-publisher-controller",
];

export interface ControlPlaneOptions {
  readonly apiserver: KubeApiserver;
  readonly binaries: ClusterBinaries;
  /** where the logs and the CA file go */
  readonly dir: string;
  /** how long a node may miss its Lease renewals before it is NotReady (seconds); default 16 */
  readonly nodeGraceSeconds?: number;
}

export interface ControlPlane {
  readonly controllerManager: Daemon;
  readonly scheduler: Daemon;
  exited(): string | undefined;
  logTail(): string;
  stop(): Promise<void>;
}

/**
 * kube-controller-manager and kube-scheduler against the suite's kube-apiserver, with the admin
 * kubeconfig, no leader election (one of each) and no serving port (nothing scrapes them here).
 */
export function startControlPlane(options: ControlPlaneOptions): ControlPlane {
  const { apiserver, binaries, dir } = options;
  const logs = join(dir, "logs");
  mkdirSync(logs, { recursive: true });
  const caFile = join(dir, "apiserver-ca.crt");
  writeFileSync(caFile, apiserver.ca);
  const common = [`--kubeconfig=${apiserver.kubeconfigPath}`, "--leader-elect=false", "--secure-port=0", "--v=1"];
  const grace = options.nodeGraceSeconds ?? 16;
  const controllerManager = startDaemon({
    name: "kube-controller-manager",
    command: binaries.kubeControllerManager,
    args: [
      ...common,
      `--controllers=${CONTROLLERS.join(",")}`,
      `--root-ca-file=${caFile}`,
      `--node-monitor-grace-period=${grace}s`,
      "--node-monitor-period=1s",
      "--use-service-account-credentials=false",
      "--concurrent-statefulset-syncs=5",
    ],
    logs,
  });
  const scheduler = startDaemon({ name: "kube-scheduler", command: binaries.kubeScheduler, args: common, logs });
  const daemons = [controllerManager, scheduler];
  return {
    controllerManager,
    scheduler,
    exited: () => daemons.map((d) => d.exited()).find((why) => why !== undefined),
    logTail: () => daemons.map((d) => `--- ${d.name}\n${d.logTail(15)}`).join("\n"),
    async stop() {
      await Promise.all(daemons.map((d) => d.stop()));
    },
  };
}
