import { InvalidRequestError, type PodFacts, podRefOf } from "@ipamkit/core";
import { CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { apiTransport, retryOnReset } from "./api.js";
import { apiFailure, mapKubeError } from "./errors.js";
import { parseNetworkStatus } from "./network-status.js";

/** The pod as the reconciler's planner sees it (core's PodFacts). */
export function podFacts(pod: V1Pod): PodFacts {
  const meta = pod.metadata ?? {};
  const networkStatus = parseNetworkStatus(meta.annotations);
  const evicted = (pod.status?.conditions ?? []).some(
    (c) => c.type === "DisruptionTarget" && c.status === "True" && c.reason === "DeletionByTaintManager",
  );
  return {
    namespace: meta.namespace ?? "",
    name: meta.name ?? "",
    uid: meta.uid ?? "",
    phase: pod.status?.phase ?? "Pending",
    evictedByTaintManager: evicted,
    ...(networkStatus === undefined ? {} : { networkStatus }),
  };
}

/** Which pods are alive, read from the Kubernetes API (the reconciler's `PodSource`). */
export interface KubernetesPodSource {
  /** Every pod, by `namespace/name`. */
  list(): Promise<Map<string, PodFacts>>;
  /** One pod now (a fresh read, for re-validation before a release); undefined when it does not exist. */
  get(namespace: string, name: string): Promise<PodFacts | undefined>;
  close(): void;
}

export interface KubernetesPodSourceOptions {
  kubeConfig: KubeConfig;
  /** Deadline of each request (default 30 000 ms; one page of a large list can be slow). */
  requestTimeoutMs?: number;
  /** LIST page size (default 500). */
  pageSize?: number;
}

/** A continue token can expire (410) on a long list; the list then starts again, this often. */
const LIST_RESTARTS = 3;

/** Pods from the Kubernetes API, listed cluster-wide page by page over one consistent snapshot. */
export function createKubernetesPodSource(options: KubernetesPodSourceOptions): KubernetesPodSource {
  const pageSize = options.pageSize ?? 500;
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new InvalidRequestError("pageSize must be a positive integer");
  const call = apiTransport(options.requestTimeoutMs ?? 30_000);
  const api = options.kubeConfig.makeApiClient(CoreV1Api);

  async function listOnce(): Promise<Map<string, PodFacts> | "expired"> {
    const pods = new Map<string, PodFacts>();
    let token: string | undefined;
    do {
      try {
        const page = await retryOnReset(() =>
          api.listPodForAllNamespaces({ limit: pageSize, ...(token ? { _continue: token } : {}) }, call),
        );
        for (const pod of page.items) {
          const facts = podFacts(pod);
          pods.set(podRefOf(facts), facts);
        }
        token = page.metadata?._continue || undefined;
      } catch (error) {
        if (token !== undefined && apiFailure(error).status === 410) return "expired";
        throw mapKubeError(error, "list", "pods in all namespaces");
      }
    } while (token !== undefined);
    return pods;
  }

  return {
    async list() {
      for (let attempt = 0; ; attempt++) {
        const pods = await listOnce();
        if (pods !== "expired") return pods;
        if (attempt >= LIST_RESTARTS) throw mapKubeError(new Error("the pod list expired (410) on every attempt"), "list", "pods");
      }
    },
    async get(namespace, name) {
      try {
        return podFacts(await retryOnReset(() => api.readNamespacedPod({ namespace, name }, call)));
      } catch (error) {
        if (apiFailure(error).status === 404) return undefined;
        throw mapKubeError(error, "get", `pod ${namespace}/${name}`);
      }
    },
    close: () => call.close(),
  };
}
