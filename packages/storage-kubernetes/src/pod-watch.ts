import { podRefOf } from "@ipamkit/core";
import { CoreV1Api, type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { apiFailure, mapKubeError } from "./errors.js";
import { podFacts } from "./pods.js";

/** What a watch logs to (a pino logger fits). */
export interface WatchLogger {
  warn(fields: object, message: string): void;
  warn(message: string): void;
}

/** What the watch reports to (the reconciler's pod controller). */
export interface PodWatchHandlers {
  /** A pod was deleted, became terminal (Succeeded/Failed) or is being evicted by the taint manager. */
  onGone: (podRef: string) => void;
  /** Events may have been missed (the watch fell out of the server's history): reconcile everything. */
  onGap: () => void;
  logger: WatchLogger;
  signal: AbortSignal;
}

export interface KubernetesPodWatchOptions {
  kubeConfig: KubeConfig;
  /** Server-side watch timeout (default 300 s); the watch then resumes from the last version seen. */
  timeoutSeconds?: number;
  /** Pause before resuming a failed watch (default 1000 ms). */
  retryMs?: number;
}

/** Watches every pod of the cluster (the reconciler's `PodWatch`). */
export interface KubernetesPodWatch {
  /** Resolves when `handlers.signal` aborts. */
  watch(handlers: PodWatchHandlers): Promise<void>;
}

export function createKubernetesPodWatch(options: KubernetesPodWatchOptions): KubernetesPodWatch {
  return { watch: (handlers) => watchPods({ ...options, ...handlers }) };
}

/** Whether a pod event means the pod's reservations may now be orphaned. */
function gone(type: string, pod: V1Pod): boolean {
  if (type === "DELETED") return true;
  const facts = podFacts(pod);
  return facts.phase === "Succeeded" || facts.phase === "Failed" || facts.evictedByTaintManager;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Watches every pod from "now" (the list's resourceVersion) and reports the ones that may have
 * left orphans. Resumes from the last resourceVersion seen (bookmarks keep it fresh); when the
 * server no longer has that history (410 Expired) it starts over and reports a gap. Resolves when
 * `signal` aborts.
 */
async function watchPods(options: KubernetesPodWatchOptions & PodWatchHandlers): Promise<void> {
  const { signal, logger } = options;
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const watch = new Watch(options.kubeConfig);
  let resourceVersion: string | undefined;
  while (!signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const list = await core.listPodForAllNamespaces({ limit: 1 });
        resourceVersion = list.metadata?.resourceVersion;
      }
      const expired = await new Promise<boolean>((resolve, reject) => {
        let isExpired = false;
        const started = watch.watch(
          "/api/v1/pods",
          { allowWatchBookmarks: true, resourceVersion, timeoutSeconds: options.timeoutSeconds ?? 300 },
          (type, object: V1Pod & { code?: number }) => {
            if (type === "ERROR") {
              if (object.code === 410) isExpired = true;
              else logger.warn({ status: object }, "pod watch error event");
              return;
            }
            resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
            if (type === "BOOKMARK") return;
            if (gone(type, object))
              options.onGone(podRefOf({ namespace: object.metadata?.namespace ?? "", name: object.metadata?.name ?? "" }));
          },
          (error: unknown) => (error === null || error === undefined || signal.aborted ? resolve(isExpired) : reject(error)),
        );
        signal.addEventListener("abort", () => void started.then((c) => c.abort()), { once: true });
      });
      if (expired) {
        logger.warn("pod watch history expired (410); starting over and reconciling everything");
        resourceVersion = undefined;
        options.onGap();
      }
    } catch (error) {
      if (signal.aborted) break;
      const status = (error as { statusCode?: number }).statusCode ?? apiFailure(error).status;
      if (status === 410) {
        resourceVersion = undefined;
        options.onGap();
      } else {
        logger.warn({ err: mapKubeError(error, "watch", "pods") }, "pod watch failed; resuming");
      }
      await sleep(options.retryMs ?? 1000, signal);
    }
  }
}
