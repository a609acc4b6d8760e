import { AppsV1Api, type V1Pod, type V1StatefulSet } from "@kubernetes/client-node";
import type { Cluster } from "./cluster.js";
import { NETWORKS_ANNOTATION, networkStatus } from "./multus.js";
import { pauseImage } from "./pause.js";
import { until } from "./processes.js";

/**
 * A StatefulSet of pause pods attaching every NAD of the cluster (net1, net2…), Parallel pod
 * management, spread over the nodes (softly: a node down does not block its pods' rebirth).
 */
export function statefulSet(cluster: Cluster, name: string, replicas: number): V1StatefulSet {
  const labels = { app: name };
  return {
    metadata: { name, namespace: cluster.namespace },
    spec: {
      serviceName: name,
      replicas,
      podManagementPolicy: "Parallel",
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, annotations: { [NETWORKS_ANNOTATION]: cluster.networks.names.join(",") } },
        spec: {
          terminationGracePeriodSeconds: 1,
          enableServiceLinks: false,
          automountServiceAccountToken: false,
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: "kubernetes.io/hostname",
              whenUnsatisfiable: "ScheduleAnyway",
              labelSelector: { matchLabels: labels },
            },
          ],
          containers: [{ name: "app", image: pauseImage().ref, imagePullPolicy: "Never" }],
        },
      },
    },
  };
}

const isReady = (p: V1Pod) => p.status?.phase === "Running" && p.metadata?.deletionTimestamp === undefined;

/** The pods of StatefulSet `name` (label app=name). */
export async function setPods(cluster: Cluster, name: string): Promise<V1Pod[]> {
  return (await cluster.core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: `app=${name}` })).items;
}

/** Whether Multus wrote an address of every NAD into the pod's network-status. */
export function attached(cluster: Cluster, pod: V1Pod): boolean {
  const status = networkStatus(pod);
  return cluster.networks.names.every((n) => status.some((s) => s.name === `${cluster.namespace}/${n}` && (s.ips?.length ?? 0) > 0));
}

/**
 * Scales the StatefulSet (creating it when there is none yet) and waits until exactly `replicas`
 * pods run with every network attached (or none are left).
 */
export async function scaleAndWait(cluster: Cluster, name: string, replicas: number, timeoutMs = 180_000): Promise<V1Pod[]> {
  const apps = cluster.apiserver.kubeConfig.makeApiClient(AppsV1Api);
  try {
    await apps.patchNamespacedStatefulSetScale({
      name,
      namespace: cluster.namespace,
      body: [{ op: "replace", path: "/spec/replicas", value: replicas }],
    });
  } catch (error) {
    if ((error as { code?: number }).code !== 404) throw error;
    await apps.createNamespacedStatefulSet({ namespace: cluster.namespace, body: statefulSet(cluster, name, replicas) });
  }
  return waitForSet(cluster, name, replicas, timeoutMs);
}

/** Waits until exactly `replicas` pods of the set run with every network attached (0: until all are gone). */
export async function waitForSet(cluster: Cluster, name: string, replicas: number, timeoutMs = 180_000): Promise<V1Pod[]> {
  let pods: V1Pod[] = [];
  try {
    await until(`StatefulSet ${name} at ${replicas} attached pods`, timeoutMs, async () => {
      pods = await setPods(cluster, name);
      if (replicas === 0) return pods.length === 0;
      return pods.length === replicas && pods.every((p) => isReady(p) && attached(cluster, p));
    });
  } catch (error) {
    const seen = pods.map((p) => `${p.metadata?.name}@${p.spec?.nodeName}:${p.status?.phase}${attached(cluster, p) ? "+net" : ""}`);
    throw new Error(`${(error as Error).message}; pods: ${seen.join(" ")}\n${await podEvents(cluster, pods)}\n${cluster.logTail()}`);
  }
  return pods;
}

/** Creates the StatefulSet and waits until its pods run attached. */
export async function createSetAndWait(cluster: Cluster, name: string, replicas: number): Promise<V1Pod[]> {
  const apps = cluster.apiserver.kubeConfig.makeApiClient(AppsV1Api);
  await apps.createNamespacedStatefulSet({ namespace: cluster.namespace, body: statefulSet(cluster, name, replicas) });
  return waitForSet(cluster, name, replicas);
}

/** Force-deletes pods as an operator does for a node that is gone (grace 0: no kubelet confirms). */
export async function forceDelete(cluster: Cluster, names: readonly string[]): Promise<void> {
  for (const name of names) await cluster.core.deleteNamespacedPod({ name, namespace: cluster.namespace, gracePeriodSeconds: 0 });
}

/** The last warning events of the pods that are not running attached (why a sandbox failed). */
async function podEvents(cluster: Cluster, pods: readonly V1Pod[]): Promise<string> {
  const stuck = new Set(pods.filter((p) => !(isReady(p) && attached(cluster, p))).map((p) => p.metadata?.uid));
  const events = (await cluster.core.listNamespacedEvent({ namespace: cluster.namespace })).items;
  return events
    .filter((e) => e.type === "Warning" && stuck.has(e.involvedObject.uid))
    .slice(-6)
    .map((e) => `event ${e.involvedObject.name} ${e.reason}: ${e.message ?? ""}`.slice(0, 600))
    .join("\n");
}
