export type { ClaimAuditReport, ClaimSkipReason } from "./claim-audit.js";
export { describeClaim } from "./claim-audit.js";
export type { PodControllerOptions } from "./controller.js";
export { runPodController } from "./controller.js";
export type { LeaderElector, PodSource, PodWatch, PodWatchHandlers } from "./ports.js";
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
