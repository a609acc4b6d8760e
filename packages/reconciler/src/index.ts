export { LEGACY_NETWORK_STATUS, NETWORK_STATUS, parseNetworkStatus } from "./network-status.js";
export { podFacts } from "./pod-facts.js";
export type { KubernetesPodSourceOptions, PodSource } from "./pod-source.js";
export { createKubernetesPodSource } from "./pod-source.js";
export type { ReconcileOptions, ReconcileReport, SkipReason } from "./reconcile.js";
export { DEFAULT_GRACE_MS, describe, reconcileOnce } from "./reconcile.js";
