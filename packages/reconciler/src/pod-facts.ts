import type { PodFacts } from "@ipamkit/core";
import type { V1Pod } from "@kubernetes/client-node";
import { parseNetworkStatus } from "./network-status.js";

/** The pod as the planner sees it. */
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
