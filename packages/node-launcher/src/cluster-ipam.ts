import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { AppsV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { CHART, helmBinary } from "./helm.js";
import type { IpamkitImage } from "./image.js";
import { until } from "./processes.js";
import { installWhereaboutsControlLoop } from "./whereabouts-cluster.js";

/** The chart's release: its name and namespace (kube-system, as Whereabouts', so it takes over its pools). */
export const RELEASE = { name: "ipamkit", namespace: "kube-system" } as const;
const AGENT_LABEL = "app.kubernetes.io/name=ipamkit-node";

/** What serves the NADs' `"type": "whereabouts"` on the cluster's nodes. */
export interface ClusterIpam {
  readonly kind: "ipamkit" | "whereabouts";
  /** OCI archives every node imports */
  readonly images: readonly string[];
  /** files for every node's /etc/cni/net.d (ipamkit's installer writes its own) */
  readonly cniFiles: Record<string, string>;
  /** binaries for every node's /opt/cni/bin (ipamkit's installer puts its own) */
  readonly cniBinaries: Record<string, string>;
  /** Resolves once the IPAM's node pods run Ready on every one of `nodes`. */
  ready(nodes: readonly string[]): Promise<void>;
  /**
   * `helm upgrade` of the release with the values it was installed with merged with `values` (and
   * the image, when given); resolves once the DaemonSet rolled out (ipamkit only).
   */
  upgrade(values: ChartValues, image?: IpamkitImage): Promise<void>;
  /** the node pods (agent pods, or Whereabouts' control loop) */
  pods(): Promise<V1Pod[]>;
  /** Deletes the agent DaemonSet (an outage: the garbage collector removes its pods); resolves once none is left (ipamkit only). */
  deleteAgents(): Promise<void>;
  /** `helm uninstall` of the release; resolves once no agent pod is left; returns helm's output (ipamkit only). */
  uninstall(): Promise<string>;
  /** `helm install` again with the current values; resolves once the agents run Ready on `nodes` (ipamkit only). */
  install(nodes: readonly string[]): Promise<void>;
}

/** Runs helm against the cluster; throws with helm's own message. */
export function helm(apiserver: KubeApiserver, args: readonly string[]): string {
  try {
    return execFileSync(helmBinary(), [...args, "--kubeconfig", apiserver.kubeconfigPath], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 300_000,
    });
  } catch (error) {
    throw new Error(`[node-launcher] helm ${args[0]} failed: ${String((error as { stderr?: string }).stderr ?? error).trim()}`);
  }
}

/** Whether each of `nodes` runs a Ready pod of `selector` in `namespace`. */
export async function readyOnEvery(core: CoreV1Api, namespace: string, selector: string, nodes: readonly string[]): Promise<boolean> {
  const pods = (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  const ready = (p: V1Pod) =>
    p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
  return nodes.every((n) => pods.some((p) => p.spec?.nodeName === n && ready(p)));
}

/** Chart values: nested objects merged key by key, everything else replaced. */
export type ChartValues = { readonly [key: string]: unknown };

function mergeValues(base: ChartValues, more: ChartValues): ChartValues {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(more)) {
    const b = out[k];
    const plain = (x: unknown): x is ChartValues => typeof x === "object" && x !== null && !Array.isArray(x);
    out[k] = plain(b) && plain(v) ? mergeValues(b, v) : v;
  }
  return out;
}

/**
 * ipamkit's chart installed by `helm install` as an operator does: the image as imported on every
 * node (pullPolicy Never), installed under `ipamkit` and `whereabouts` (the NADs name the latter),
 * the reconciler Deployment off (the tests run the reconciler program at the moments they choose,
 * with the admin kubeconfig: its pods could not reach this loopback API server from the pod
 * network). The DaemonSet pods run on the host network, where the API server's Service address
 * routes nowhere (no kube-proxy here): `daemonset.extraEnv` names it on loopback.
 */
function installIpamkit(apiserver: KubeApiserver, dir: string, image: IpamkitImage, extra: ChartValues): ClusterIpam {
  const core = apiserver.kubeConfig.makeApiClient(CoreV1Api);
  const apps = apiserver.kubeConfig.makeApiClient(AppsV1Api);
  const imageValues = (img: IpamkitImage) => {
    const [repository, tag] = img.ref.split(/:(?=[^:]+$)/);
    return { image: { repository, tag, pullPolicy: "Never" } };
  };
  let values = mergeValues(
    {
      ...imageValues(image),
      cni: { binaryNames: ["ipamkit", "whereabouts"] },
      // the nodes share the host's one address: two agents cannot both bind the metrics port
      agent: { metrics: { enabled: false } },
      reconciler: { enabled: false },
      daemonset: {
        extraEnv: [
          { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
          { name: "KUBERNETES_SERVICE_PORT", value: new URL(apiserver.url).port },
        ],
      },
    },
    extra,
  );
  const valuesFile = join(dir, "values.json");
  const run = (verb: "install" | "upgrade") => {
    writeFileSync(valuesFile, JSON.stringify(values));
    return helm(apiserver, [verb, RELEASE.name, CHART, "--namespace", RELEASE.namespace, "--values", valuesFile]);
  };
  run("install");
  let images = [image.archive];
  const pods = async () => (await core.listNamespacedPod({ namespace: RELEASE.namespace, labelSelector: AGENT_LABEL })).items;
  const noAgentLeft = () => until("no agent pod left", 180_000, async () => (await pods()).length === 0);
  const ready = async (nodes: readonly string[]) => {
    let last = "";
    try {
      await until("ipamkit's agent pod Ready on every node", 120_000, async () => {
        last = JSON.stringify((await pods()).map((p) => [p.spec?.nodeName, p.status?.containerStatuses?.map((c) => c.state)]));
        return readyOnEvery(core, RELEASE.namespace, AGENT_LABEL, nodes);
      });
    } catch (error) {
      throw new Error(`${(error as Error).message}; agent pods: ${last}`);
    }
  };
  return {
    kind: "ipamkit",
    get images() {
      return images;
    },
    cniFiles: {},
    cniBinaries: {},
    ready,
    async upgrade(more, newImage) {
      values = mergeValues(values, { ...more, ...(newImage ? imageValues(newImage) : {}) });
      if (newImage !== undefined) images = [newImage.archive];
      run("upgrade");
      await until("the DaemonSet rolled out", 300_000, async () => {
        const ds = (await apps.listNamespacedDaemonSet({ namespace: RELEASE.namespace, labelSelector: AGENT_LABEL })).items[0];
        const st = ds?.status;
        return (
          st !== undefined &&
          (st.observedGeneration ?? 0) >= (ds?.metadata?.generation ?? 1) &&
          st.updatedNumberScheduled === st.desiredNumberScheduled &&
          st.numberAvailable === st.desiredNumberScheduled
        );
      });
    },
    pods,
    async deleteAgents() {
      const ds = (await apps.listNamespacedDaemonSet({ namespace: RELEASE.namespace, labelSelector: AGENT_LABEL })).items;
      for (const d of ds)
        await apps.deleteNamespacedDaemonSet({
          name: d.metadata?.name ?? "",
          namespace: RELEASE.namespace,
          propagationPolicy: "Background",
        });
      await noAgentLeft();
    },
    async uninstall() {
      const out = helm(apiserver, ["uninstall", RELEASE.name, "--namespace", RELEASE.namespace]);
      await noAgentLeft();
      return out;
    },
    async install(nodes) {
      run("install");
      await ready(nodes);
    },
  };
}

export async function installClusterIpam(options: {
  kind: "ipamkit" | "whereabouts";
  apiserver: KubeApiserver;
  dir: string;
  image: IpamkitImage | undefined;
  values: ChartValues | undefined;
}): Promise<ClusterIpam> {
  if (options.kind === "whereabouts") return installWhereaboutsControlLoop(options.apiserver);
  if (options.image === undefined) throw new Error("[node-launcher] a cluster with ipamkit needs its image (ClusterOptions.image)");
  return installIpamkit(options.apiserver, options.dir, options.image, options.values ?? {});
}
