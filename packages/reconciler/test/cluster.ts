import { createIpam, type Ipam, type IpamStore, parseRange } from "@ipamkit/core";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { createKubernetesPodSource, type PodSource } from "../src/pod-source.js";

export const POOL_NS = "kube-system";
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

/** A test cluster: the strict test API server, the Kubernetes store on it, and its pods. */
export interface Cluster {
  server: KubeTestServer;
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

export async function startCluster(): Promise<Cluster> {
  const server = await startKubeTestServer({ port: 0 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfig({ namespace: POOL_NS }));
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
      await server.close();
    },
  };
}
