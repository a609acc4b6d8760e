import { createIpam, type Ipam, type IpamStore, parseRange } from "@ipamkit/core";
import { binaryPaths, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { createKubernetesPodSource, createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import type { PodSource } from "../src/ports.js";

export const POOL_NS = "kube-system";
/** The namespace of the leader-election Lease in the tests. */
export const LEASE_NS = "ipam";
export const range = parseRange({ range: "10.1.0.0/24" });
/** A clock an hour back, so that reservations made "then" are past the grace period. */
export const anHourAgo = () => new Date(Date.now() - 3_600_000);

export interface PodSpec {
  namespace?: string;
  name: string;
  phase?: "Pending" | "Running" | "Succeeded" | "Failed";
  /** IPs on net1 in the Multus network-status annotation; undefined: no annotation. */
  net1?: string[];
  evictedByTaintManager?: boolean;
}

/** A test cluster: an API server (the strict stand-in or a real one), the Kubernetes store on it, and its pods. */
export interface Cluster {
  /** The stand-in, for fault injection; undefined on a real kube-apiserver (which cannot fail on demand). */
  server: KubeTestServer | undefined;
  kubeConfig: KubeConfig;
  store: IpamStore;
  pods: PodSource;
  /** An ipam whose reservations are an hour old. */
  oldIpam: Ipam;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  createPod(spec: PodSpec): Promise<string>;
  deletePod(namespace: string, name: string): Promise<void>;
  close(): Promise<void>;
}

export function networkStatus(ips: string[]): string {
  return JSON.stringify([
    { name: "cbr0", interface: "eth0", ips: ["10.244.1.9"], default: true },
    { name: "ns/macvlan", interface: "net1", ips, mac: "0a:58:0a:01:00:09", dns: {} },
  ]);
}

/** A fresh cluster on the strict test API server (a new server each time). */
export async function startCluster(): Promise<Cluster> {
  const server = await startKubeTestServer({ port: 0 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig({ namespace: POOL_NS }));
  return clusterOn(kubeConfig, server, () => server.close());
}

function clusterOn(kubeConfig: KubeConfig, server: KubeTestServer | undefined, closeServer: () => Promise<void>): Cluster {
  const store = createKubernetesStore({ kubeconfig: kubeConfig, whereaboutsCompatible: false });
  const pods = createKubernetesPodSource({ kubeConfig, pageSize: 3 });
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    server,
    kubeConfig,
    store,
    pods,
    oldIpam: createIpam({ store, now: anHourAgo }),
    core,
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    async createPod(spec) {
      const namespace = spec.namespace ?? "ns";
      const annotations: Record<string, string> =
        spec.net1 === undefined ? {} : { "k8s.v1.cni.cncf.io/network-status": networkStatus(spec.net1) };
      const created = await core.createNamespacedPod({
        namespace,
        body: { metadata: { name: spec.name, annotations }, spec: { containers: [{ name: "app", image: "registry.example/app:1" }] } },
      });
      const status: V1Pod["status"] = { phase: spec.phase ?? "Running" };
      if (spec.evictedByTaintManager === true) {
        status.conditions = [
          {
            type: "DisruptionTarget",
            status: "True",
            reason: "DeletionByTaintManager",
            message: "Taint manager: deleting due to NoExecute taint",
          },
        ];
      }
      await core.replaceNamespacedPodStatus({ namespace, name: spec.name, body: { ...created, status } });
      return created.metadata?.uid ?? "";
    },
    async deletePod(namespace, name) {
      await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
    },
    async close() {
      pods.close();
      await store.close();
      await closeServer();
    },
  };
}

/** An API server a suite runs on; `cluster()` hands out a fresh, empty cluster on it for each test. */
export interface ClusterTarget {
  readonly name: string;
  /** True on the stand-in, whose faults can be injected (`cluster.server.failNext`). */
  readonly faults: boolean;
  open(): Promise<{ cluster(): Promise<Cluster>; close(): Promise<void> }>;
}

const testServerTarget: ClusterTarget = {
  name: "kube-test-server",
  faults: true,
  async open() {
    return { cluster: startCluster, close: async () => {} };
  },
};

const WHEREABOUTS = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: POOL_NS };

/**
 * A real kube-apiserver, started once per file (a start costs seconds): each cluster() first
 * empties it — the pods of namespace `ns`, the Whereabouts objects of kube-system and the Leases
 * of namespace `ipam`.
 */
const realApiserverTarget: ClusterTarget = {
  name: `kube-apiserver ${binaryPaths().kubernetesVersion}`,
  faults: false,
  async open() {
    const server = await startKubeApiserver({ namespace: POOL_NS, namespaces: ["ns", LEASE_NS] });
    const core = server.kubeConfig.makeApiClient(CoreV1Api);
    const custom = server.kubeConfig.makeApiClient(CustomObjectsApi);
    const coordination = server.kubeConfig.makeApiClient(CoordinationV1Api);
    return {
      async cluster() {
        await core.deleteCollectionNamespacedPod({ namespace: "ns", gracePeriodSeconds: 0 });
        for (const plural of ["ippools", "overlappingrangeipreservations"])
          await custom.deleteCollectionNamespacedCustomObject({ ...WHEREABOUTS, plural });
        await coordination.deleteCollectionNamespacedLease({ namespace: LEASE_NS });
        return clusterOn(server.kubeConfig, undefined, async () => {});
      },
      close: () => server.stop(),
    };
  },
};

/** The stand-in and a real kube-apiserver: the same tests run on both. */
export const clusterTargets = (): ClusterTarget[] => [testServerTarget, realApiserverTarget];

/**
 * Registers the hooks of a describe on `target`: its host opened once, and a fresh cluster for each
 * test, handed to `use` before the test and closed after it.
 */
export function freshClusterEach(target: ClusterTarget, use: (cluster: Cluster) => void): void {
  let host: Awaited<ReturnType<ClusterTarget["open"]>> | undefined;
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    host = await target.open();
  });
  afterAll(async () => {
    await host?.close();
  });
  beforeEach(async () => {
    if (host === undefined) throw new Error(`${target.name} did not open`);
    cluster = await host.cluster();
    use(cluster);
  });
  afterEach(async () => {
    await cluster?.close();
  });
}

/** The stand-in behind `cluster`, for fault injection; throws on a real kube-apiserver. */
export function standIn(cluster: Cluster): KubeTestServer {
  if (cluster.server === undefined) throw new Error("fault injection needs the kube-test-server target");
  return cluster.server;
}
