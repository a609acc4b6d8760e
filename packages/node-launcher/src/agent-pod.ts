import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, type KubernetesObject, KubernetesObjectApi, type V1DaemonSet, type V1Pod } from "@kubernetes/client-node";
import type { NodeLayout } from "./config.js";
import { renderChart } from "./helm.js";
import type { IpamkitImage } from "./image.js";
import { until } from "./processes.js";

const SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
const RELEASE = "ipamkit";

export interface AgentPod {
  /** the release namespace: the chart's objects, the agent pod and the pools (kube-system, as Whereabouts) */
  readonly namespace: string;
  readonly podName: string;
  /** the flat file the chart's installer writes on the node; the conflist names it */
  readonly flatFile: string;
  /** creates the agent pod (the DaemonSet's pod for this node); resolves once it is Ready */
  start(): Promise<void>;
  /** deletes it (graceful); resolves once it is gone from the API */
  stop(): Promise<void>;
}

export interface AgentPodOptions {
  apiserver: KubeApiserver;
  layout: NodeLayout;
  nodeName: string;
  image: IpamkitImage;
  /** the chart's release namespace (default kube-system) */
  namespace?: string;
  /** extra chart values, e.g. `{ "cni.extraFlatFileKeys.sticky": true }` */
  values?: Record<string, string | boolean | number>;
}

/** `helm template` of the chart with this node's dirs and image; the objects it renders */
function renderAgentChart(options: AgentPodOptions, namespace: string): KubernetesObject[] {
  const [repository, tag] = options.image.ref.split(/:(?=[^:]+$)/);
  return renderChart({
    release: RELEASE,
    namespace,
    values: {
      "image.repository": repository ?? "",
      "image.tag": tag ?? "",
      "image.pullPolicy": "Never",
      "cni.binDir": options.layout.cniBinDir,
      "cni.confDir": options.layout.cniConfDir,
      // the runtime names the flat file (IPAMKIT_CONFIGURATION_PATH in its environment): any confDir serves
      "cni.runtimeNamesConfigurationPath": true,
      "agent.socketDir": options.layout.agentDir,
      "reconciler.enabled": false,
      ...options.values,
    },
  });
}

/** creates the chart's ServiceAccount and RBAC objects; ones an earlier node applied are kept */
async function applyRbac(apiserver: KubeApiserver, objects: readonly KubernetesObject[]): Promise<void> {
  const generic = KubernetesObjectApi.makeApiClient(apiserver.kubeConfig);
  const rbac = objects.filter((o) => ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"].includes(o.kind ?? ""));
  for (const object of rbac) {
    try {
      await generic.create(object as KubernetesObject);
    } catch (error) {
      // an earlier node on the same API server applied the same release: keep it (helm upgrade would too)
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }
}

/** requests a token for the ServiceAccount and writes it, the CA and the namespace where the kubelet would mount them; returns the directory */
async function writeServiceAccountDir(options: {
  core: CoreV1Api;
  apiserver: KubeApiserver;
  layoutDir: string;
  serviceAccount: string;
  namespace: string;
}): Promise<string> {
  const { core, namespace } = options;
  const saDir = join(options.layoutDir, "serviceaccount");
  mkdirSync(saDir, { recursive: true, mode: 0o700 });
  const token = await core.createNamespacedServiceAccountToken({
    name: options.serviceAccount,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 86_400 } },
  });
  writeFileSync(join(saDir, "token"), token.status?.token ?? "", { mode: 0o600 });
  writeFileSync(join(saDir, "ca.crt"), options.apiserver.ca);
  writeFileSync(join(saDir, "namespace"), namespace);
  return saDir;
}

/** the DaemonSet's pod template as this node's pod, with the API server's address and the token mounted */
function buildAgentPod(options: {
  template: NonNullable<V1DaemonSet["spec"]>["template"];
  podName: string;
  namespace: string;
  nodeName: string;
  apiserverUrl: string;
  saDir: string;
}): V1Pod {
  const { template } = options;
  const port = new URL(options.apiserverUrl).port;
  const withApiAccess = <T extends { env?: unknown[]; volumeMounts?: unknown[] }>(c: T): T => ({
    ...c,
    env: [...(c.env ?? []), { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" }, { name: "KUBERNETES_SERVICE_PORT", value: port }],
    volumeMounts: [...(c.volumeMounts ?? []), { name: "serviceaccount", mountPath: SA_MOUNT, readOnly: true }],
  });
  return {
    metadata: { name: options.podName, namespace: options.namespace, labels: template.metadata?.labels },
    spec: {
      ...template.spec,
      nodeName: options.nodeName,
      containers: (template.spec?.containers ?? []).map(withApiAccess),
      initContainers: (template.spec?.initContainers ?? []).map(withApiAccess),
      volumes: [...(template.spec?.volumes ?? []), { name: "serviceaccount", hostPath: { path: options.saDir, type: "Directory" } }],
    },
  };
}

/** whether the pod exists and is Ready, and its containers' states (for error messages) */
async function podPhase(core: CoreV1Api, podName: string, namespace: string): Promise<{ exists: boolean; ready: boolean; status: string }> {
  try {
    const p = await core.readNamespacedPod({ name: podName, namespace });
    const ready = p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
    return { exists: true, ready, status: JSON.stringify(p.status?.containerStatuses?.map((c) => c.state) ?? []) };
  } catch {
    return { exists: false, ready: false, status: "" };
  }
}

/**
 * ipamkit's chart as it runs on this node: `helm template` with the node's CNI dirs and socket dir
 * and the locally imported image; its ServiceAccount and RBAC applied; and the DaemonSet's pod
 * template created as this node's pod (what the DaemonSet controller would create: no
 * controller-manager runs here). The suite's API server runs without the ServiceAccount admission
 * plugin, so the token the kubelet would project is requested (TokenRequest) and mounted from a
 * host directory at the same path, and KUBERNETES_SERVICE_HOST/PORT name the loopback API server
 * (the pod runs on the host network; no kube-proxy routes the Service address).
 */
export async function prepareAgentPod(options: AgentPodOptions): Promise<AgentPod> {
  const namespace = options.namespace ?? "kube-system";
  const objects = renderAgentChart(options, namespace);
  const daemonSet = objects.find((o) => o.kind === "DaemonSet") as V1DaemonSet | undefined;
  if (daemonSet?.spec === undefined) throw new Error("[node-launcher] the chart rendered no DaemonSet");
  await applyRbac(options.apiserver, objects);
  const core = options.apiserver.kubeConfig.makeApiClient(CoreV1Api);
  const template = daemonSet.spec.template;
  const saDir = await writeServiceAccountDir({
    core,
    apiserver: options.apiserver,
    layoutDir: options.layout.dir,
    serviceAccount: template.spec?.serviceAccountName ?? "",
    namespace,
  });
  const podName = `${daemonSet.metadata?.name ?? RELEASE}-${options.nodeName}`;
  const pod = buildAgentPod({ template, podName, namespace, nodeName: options.nodeName, apiserverUrl: options.apiserver.url, saDir });
  const phase = () => podPhase(core, podName, namespace);
  return {
    namespace,
    podName,
    flatFile: join(options.layout.cniConfDir, "whereabouts.d", "whereabouts.conf"),
    async start() {
      if ((await phase()).exists) return;
      await core.createNamespacedPod({ namespace, body: pod });
      let last = "";
      try {
        await until(`the agent pod ${podName} Ready`, 90_000, async () => {
          const p = await phase();
          last = p.status;
          return p.ready;
        });
      } catch (error) {
        throw new Error(`${(error as Error).message}; its containers: ${last}`);
      }
    },
    async stop() {
      if (!(await phase()).exists) return;
      await core.deleteNamespacedPod({ name: podName, namespace });
      await until(`the agent pod ${podName} gone`, 60_000, async () => !(await phase()).exists);
    },
  };
}
