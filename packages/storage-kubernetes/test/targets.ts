import { readFileSync } from "node:fs";
import { binaryPaths, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { startKubeTestServer } from "@ipamkit/kube-test-server";
import { ApiextensionsV1Api, CoreV1Api, KubeConfig, loadAllYaml } from "@kubernetes/client-node";

/**
 * Where the Kubernetes suites run: always the project's strict test API server (in-process, real
 * HTTP) and a real kube-apiserver on a real etcd (@ipamkit/kube-apiserver-launcher; it fails, never
 * skips, when its binaries are not built); also a real cluster when KUBECONFIG is set. On the real
 * servers each test gets a fresh namespace, created by the run, and the project's CRDs are installed.
 */
export interface KubeEnv {
  readonly kubeConfig: KubeConfig;
  /** A fresh, empty namespace (created on a real cluster). */
  namespace(): Promise<string>;
  close(): Promise<void>;
}

export interface KubeTarget {
  readonly name: string;
  /** Allocators × allocations of the conformance suite's concurrency case (default 32 × 20). */
  readonly concurrency?: { allocators: number; each: number };
  start(): Promise<KubeEnv>;
}

let seq = 0;
const fresh = () => `ipamkit-t${process.pid}-${Date.now().toString(36)}-${seq++}`;

const testServer: KubeTarget = {
  name: "kube-test-server",
  async start() {
    const server = await startKubeTestServer({ port: 0 });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(server.kubeconfig());
    return { kubeConfig, namespace: async () => fresh(), close: () => server.close() };
  },
};

/** A real kube-apiserver started for the suite: the same tests, the same CRDs, nothing stubbed. */
const realApiserver: KubeTarget = {
  name: `kube-apiserver ${binaryPaths().kubernetesVersion}`,
  // every conflicting write is a real HTTPS round trip through admission and etcd: 32 × 20 on one
  // pool takes minutes there, 16 × 5 still meets hundreds of 409s
  concurrency: { allocators: 16, each: 5 },
  async start() {
    const server = await startKubeApiserver();
    const core = server.kubeConfig.makeApiClient(CoreV1Api);
    return {
      kubeConfig: server.kubeConfig,
      async namespace() {
        const name = fresh();
        await core.createNamespace({ body: { metadata: { name } } });
        return name;
      },
      close: () => server.stop(),
    };
  },
};

const CRDS = new URL("../manifests/crds.yaml", import.meta.url);

const realCluster = (path: string): KubeTarget => ({
  name: `cluster (KUBECONFIG=${path})`,
  async start() {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(path);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    await installCrds(kubeConfig);
    const created: string[] = [];
    return {
      kubeConfig,
      async namespace() {
        const name = fresh();
        await core.createNamespace({ body: { metadata: { name, labels: { "ipamkit.io/test": "true" } } } });
        created.push(name);
        return name;
      },
      async close() {
        await Promise.allSettled(created.map((name) => core.deleteNamespace({ name })));
      },
    };
  },
});

async function installCrds(kubeConfig: KubeConfig): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  for (const crd of loadAllYaml(readFileSync(CRDS, "utf8"))) {
    const name = (crd as { metadata: { name: string } }).metadata.name;
    try {
      await api.readCustomResourceDefinition({ name });
    } catch {
      await api.createCustomResourceDefinition({ body: crd as never });
    }
    for (let i = 0; i < 100; i++) {
      const current = await api.readCustomResourceDefinition({ name });
      if (current.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export function kubeTargets(): KubeTarget[] {
  const path = process.env.KUBECONFIG;
  if (path === undefined || path === "") {
    console.info("[storage-kubernetes] KUBECONFIG is not set: the real-cluster suites are not registered (only the test server runs)");
    return [testServer, realApiserver];
  }
  return [testServer, realApiserver, realCluster(path)];
}
