import { binaryPaths, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { CoordinationV1Api, KubeConfig } from "@kubernetes/client-node";

/** The namespace of the Lease in these tests. */
export const LEASE_NS = "ipam";

/** One test's API server: the strict stand-in (faults can be injected) or a real kube-apiserver. */
export interface Cluster {
  server: KubeTestServer | undefined;
  kubeConfig: KubeConfig;
  close(): Promise<void>;
}

/** Where the suite runs: a fresh stand-in per test, and a real kube-apiserver per file (its Leases emptied per test). */
export const clusterTargets = (): {
  name: string;
  /** True on the stand-in, whose faults can be injected. */
  faults: boolean;
  open(): Promise<{ cluster(): Promise<Cluster>; close(): Promise<void> }>;
}[] => [
  {
    name: "kube-test-server",
    faults: true,
    async open() {
      const cluster = async (): Promise<Cluster> => {
        const server = await startKubeTestServer({ port: 0 });
        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromString(server.kubeconfig({ namespace: LEASE_NS }));
        return { server, kubeConfig, close: () => server.close() };
      };
      return { cluster, close: async () => {} };
    },
  },
  {
    name: `kube-apiserver ${binaryPaths().kubernetesVersion}`,
    faults: false,
    async open() {
      const server = await startKubeApiserver({ namespaces: [LEASE_NS] });
      const coordination = server.kubeConfig.makeApiClient(CoordinationV1Api);
      return {
        async cluster() {
          await coordination.deleteCollectionNamespacedLease({ namespace: LEASE_NS });
          return { server: undefined, kubeConfig: server.kubeConfig, close: async () => {} };
        },
        close: () => server.stop(),
      };
    },
  },
];

/** The stand-in behind `cluster`, for fault injection; throws on a real kube-apiserver. */
export function standIn(cluster: Cluster): KubeTestServer {
  if (cluster.server === undefined) throw new Error("fault injection needs the kube-test-server target");
  return cluster.server;
}
