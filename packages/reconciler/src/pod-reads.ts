import { judgeReservation, type PodFacts, type Verdict } from "@ipamkit/core";
import { mapLimited } from "./map-limited.js";
import type { PodSource } from "./ports.js";
import type { ReconcileOptions, ReconcileReport } from "./reconcile.js";

/**
 * Orphans' pods are re-read by one fresh list instead of a GET each when they are at least this
 * many and at least 1/{@link RELIST_RATIO} of the pods listed: a request costs about as much as
 * listing that many pods, and after a power-cycle every pod of a node is an orphan's. The same
 * rule decides whether the releases' claims are listed in bulk (`listClaims` with contents) instead of read one
 * by one, against the reservations observed (with overlapping-range protection, a claim each).
 */
export const RELIST_MIN = 32;
export const RELIST_RATIO = 32;

/** True when `count` items are cheaper read by listing all `listed` than by a request each. */
export const cheaperListed = (count: number, listed: number): boolean => count >= RELIST_MIN && count * RELIST_RATIO >= listed;

/** Every pod when reconciling everything (one paginated list); only the named ones for a targeted pass. */
export async function podsFor(options: ReconcileOptions, podRefs: string[]): Promise<ReadonlyMap<string, PodFacts>> {
  if (options.podRefs === undefined) return options.pods.list();
  const pods = new Map<string, PodFacts>();
  for (const ref of new Set(podRefs)) {
    const pod = await getPod(options.pods, ref);
    if (pod !== undefined) pods.set(ref, pod);
  }
  return pods;
}

async function getPod(source: PodSource, podRef: string): Promise<PodFacts | undefined> {
  const slash = podRef.indexOf("/");
  return source.get(podRef.slice(0, slash), podRef.slice(slash + 1));
}

type PodRead = { pod: PodFacts | undefined } | { error: Error };

const failedRead = (error: unknown): { error: Error } => ({ error: error instanceof Error ? error : new Error(String(error)) });

/** A fresh read of each pod: one GET each, or one new list of every pod when that is cheaper ({@link RELIST_MIN}). */
async function readPods(podRefs: string[], options: { pods: PodSource; concurrency: number; listed: number }): Promise<PodRead[]> {
  if (cheaperListed(podRefs.length, options.listed)) {
    return options.pods.list().then(
      (now) => podRefs.map((podRef): PodRead => ({ pod: now.get(podRef) })),
      (error: unknown) => podRefs.map(() => failedRead(error)),
    );
  }
  return mapLimited(podRefs, options.concurrency, (podRef) => getPod(options.pods, podRef).then((pod): PodRead => ({ pod }), failedRead));
}

/** Re-reads the pod of every orphan (once per pod) and keeps only those still orphaned. */
export async function revalidate(
  orphans: Verdict[],
  options: ReconcileOptions & { concurrency: number; listed: number },
  report: ReconcileReport,
  now: () => Date,
  graceMs: number,
): Promise<Verdict[]> {
  const podRefs = [...new Set(orphans.map((v) => v.observed.reservation.podRef ?? ""))];
  const reads = await readPods(podRefs, options);
  const fresh = new Map(podRefs.map((podRef, i) => [podRef, reads[i] as PodRead]));
  const confirmed: Verdict[] = [];
  for (const verdict of orphans) {
    const podRef = verdict.observed.reservation.podRef ?? "";
    const read = fresh.get(podRef) as PodRead; // every orphan's pod was read once, above
    if ("error" in read) {
      report.failed.push({ subject: `pod ${podRef}`, error: read.error });
      continue;
    }
    const again = judgeReservation(verdict.observed, read.pod, { now: now(), graceMs });
    if (again.release) confirmed.push(again);
    else report.skipped.push({ verdict, why: "pod-revalidated" });
  }
  return confirmed;
}
