import type { PodFacts } from "@ipamkit/core";
import type { Logger } from "pino";

// What the reconciler is given from outside: where pods are read and watched, and who leads. The
// Kubernetes implementations are in @ipamkit/storage-kubernetes (createKubernetesPodSource,
// createKubernetesPodWatch, createLeaderElector); the reconciler itself depends only on core.

/** Where the reconciler learns which pods are alive. */
export interface PodSource {
  /** Every pod, by `namespace/name`. */
  list(): Promise<Map<string, PodFacts>>;
  /** One pod now (a fresh read, for re-validation before a release); undefined when it does not exist. */
  get(namespace: string, name: string): Promise<PodFacts | undefined>;
  close(): void;
}

/** What a pod watch reports to. */
export interface PodWatchHandlers {
  /** A pod was deleted, became terminal (Succeeded/Failed) or is being evicted by the taint manager. */
  onGone: (podRef: string) => void;
  /** Events may have been missed (the watch fell out of the server's history): reconcile everything. */
  onGap: () => void;
  logger: Logger;
  signal: AbortSignal;
}

/** Pod events from "now" on, for the pod controller's targeted passes. */
export interface PodWatch {
  /** Watches until `handlers.signal` aborts, then resolves. */
  watch(handlers: PodWatchHandlers): Promise<void>;
}

/** One leader among the reconciler's replicas. */
export interface LeaderElector {
  readonly identity: string;
  isLeader(): boolean;
  /**
   * Campaigns until `signal` aborts; runs `lead(leadSignal)` while this instance leads, where
   * `leadSignal` aborts when leadership is lost or `signal` aborts.
   */
  run(lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void>;
}
