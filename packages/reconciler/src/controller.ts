import { InvalidRequestError } from "@ipamkit/core";
import pino from "pino";
import type { PodWatch } from "./ports.js";
import { type ReconcileOptions, type ReconcileReport, reconcileOnce } from "./reconcile.js";

/** After a failed full pass, the next one comes this soon (or at the resync, if sooner). */
const RETRY_FULL_MS = 30_000;

export interface PodControllerOptions extends Omit<ReconcileOptions, "podRefs"> {
  /** Pod events (storage-kubernetes' createKubernetesPodWatch). */
  podWatch: PodWatch;
  /** A full reconcile at start and then this often (default 10 min): catches what the watch missed. */
  resyncMs?: number;
  /** Pod events are gathered this long into one targeted pass (default 500 ms). */
  debounceMs?: number;
  /** Called after every pass. */
  onPass?: (pass: { kind: "full" | "targeted"; report?: ReconcileReport; error?: Error }) => void;
}

/**
 * The pod-deletion controller: a full reconcile at start (deletions that happened while nothing
 * was running) and every `resyncMs`, and between them a targeted pass for the pods that a watch
 * saw deleted, finished or evicted. One pass at a time. Resolves when `signal` aborts.
 */
export async function runPodController(options: PodControllerOptions, signal: AbortSignal): Promise<void> {
  const resyncMs = options.resyncMs ?? 600_000;
  const debounceMs = options.debounceMs ?? 500;
  if (!(resyncMs > 0)) throw new InvalidRequestError("resyncMs must be positive");
  if (!(debounceMs >= 0)) throw new InvalidRequestError("debounceMs must be zero or positive");
  const logger = options.logger ?? pino({ level: "silent" });
  const { podWatch, resyncMs: _r, debounceMs: _d, onPass, ...reconcile } = options;

  let pending = new Set<string>();
  let fullDue = true;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const poke = (delayMs: number) => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      wake?.();
    }, delayMs);
  };
  const watching = podWatch.watch({
    logger,
    signal,
    onGone: (podRef) => {
      pending.add(podRef);
      poke(debounceMs);
    },
    onGap: () => {
      fullDue = true;
      poke(0);
    },
  });

  let nextFull = 0;
  try {
    while (!signal.aborted) {
      if (fullDue || Date.now() >= nextFull) {
        fullDue = false;
        pending = new Set();
        nextFull = Date.now() + resyncMs;
        // a failed full pass is tried again soon, not only at the next resync
        if (!(await pass("full", () => reconcileOnce(reconcile)))) nextFull = Date.now() + Math.min(resyncMs, RETRY_FULL_MS);
      } else if (pending.size > 0) {
        const podRefs = pending;
        pending = new Set();
        // what a failed targeted pass missed is caught by a full pass soon after
        if (!(await pass("targeted", () => reconcileOnce({ ...reconcile, podRefs }))))
          nextFull = Math.min(nextFull, Date.now() + RETRY_FULL_MS);
      } else {
        let idle: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          idle = setTimeout(resolve, Math.max(0, nextFull - Date.now()));
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        clearTimeout(idle);
        wake = undefined;
      }
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    await watching;
  }

  async function pass(kind: "full" | "targeted", run: () => Promise<ReconcileReport>): Promise<boolean> {
    try {
      const report = await run();
      logger.info(
        { kind, reservations: report.reservations, released: report.released.length, failed: report.failed.length },
        "reconcile pass",
      );
      onPass?.({ kind, report });
      return report.failed.length === 0;
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      logger.error({ kind, err }, "reconcile pass failed; retried at the next event or resync");
      onPass?.({ kind, error: err });
      return false;
    }
  }
}
