export { formatMicroTime, parseMicroTime } from "@ipamkit/storage-kubernetes";
export type { ClaimAuditReport, ClaimSkipReason } from "./claim-audit.js";
export { describeClaim } from "./claim-audit.js";
export type { PodControllerOptions } from "./controller.js";
export { runPodController } from "./controller.js";
export type { LeaderElectionOptions, LeaderElector } from "./leader.js";
export { createLeaderElector } from "./leader.js";
export { LEGACY_NETWORK_STATUS, NETWORK_STATUS, parseNetworkStatus } from "./network-status.js";
export { podFacts } from "./pod-facts.js";
export type { KubernetesPodSourceOptions, PodSource } from "./pod-source.js";
export { createKubernetesPodSource } from "./pod-source.js";
export type { PodWatchOptions } from "./pod-watch.js";
export { watchPods } from "./pod-watch.js";
export type { PoolUsage, ReconcileOptions, ReconcileReport, SkipReason } from "./reconcile.js";
export {
  DEFAULT_CLAIM_SETTLE_MS,
  DEFAULT_CONCURRENCY,
  DEFAULT_GRACE_MS,
  describe,
  RELIST_MIN,
  RELIST_RATIO,
  reconcileOnce,
} from "./reconcile.js";
