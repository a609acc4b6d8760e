import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { createLeaderElector, type ElectionLogger, type LeaderElectionOptions, type LeaderElector } from "../src/leader-election.js";
import { formatMicroTime } from "../src/microtime.js";
import { LEASE_NS } from "./lease-targets.js";

/** A logger that keeps each line with pino's level number (20 debug, 30 info, 40 warn). */
export function recordingLogger(lines: { level: number; msg: string }[]): ElectionLogger {
  const at = (level: number) => (fields: object | string, message?: string) => {
    lines.push({ level, msg: typeof fields === "string" ? fields : (message ?? "") });
  };
  const logger: ElectionLogger = { debug: at(20), info: at(30), warn: at(40), child: () => logger };
  return logger;
}

export const NS = LEASE_NS;
const NAME = "ipamkit-reconciler";
export const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${NAME}`;
const lease = { group: "coordination.k8s.io", version: "v1", namespace: NS, plural: "leases", name: NAME };
/** Small durations keep the suite fast: the advertised lease is ceil(1.5) = 2 s. */
export const FAST = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200, requestTimeoutMs: 1_000 };
export const MICRO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

interface LeaseBody {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

let kubeConfig: KubeConfig;
let custom: CustomObjectsApi;
const runs: { stop: AbortController; done: Promise<void> }[] = [];

/** Points the helpers below at this test's API server (call in `beforeEach`). */
export function connect(config: KubeConfig): void {
  kubeConfig = config;
  custom = kubeConfig.makeApiClient(CustomObjectsApi);
}

/** Puts the timers back and stops every campaign started, waiting for each run to end (call in `afterEach`). */
export async function settle(): Promise<void> {
  restoreTimers();
  for (const run of runs.splice(0)) {
    run.stop.abort();
    await run.done;
  }
}

export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));

/**
 * Records the timers that storage-kubernetes' `src/leader-election.ts` and `src/leader-lease.ts`
 * create and have neither fired nor been cleared (the global setTimeout is looked up at call
 * time, so replacing it sees the elector's timers).
 */
export function trackLeaderTimers() {
  const pending = new Set<ReturnType<typeof setTimeout>>();
  const { setTimeout: realSet, clearTimeout: realClear } = globalThis;
  globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = realSet(() => {
      pending.delete(handle);
      callback(...args);
    }, ms);
    if (/\/src\/leader-(election|lease)\.ts/.test(new Error().stack ?? "")) pending.add(handle);
    return handle;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((handle: ReturnType<typeof setTimeout> | undefined) => {
    if (handle !== undefined) pending.delete(handle);
    realClear(handle);
  }) as typeof clearTimeout;
  restoreTimers = () => Object.assign(globalThis, { setTimeout: realSet, clearTimeout: realClear });
  return pending;
}
let restoreTimers = () => {};

/** The Lease as stored, read raw: its times are the strings the API server holds. */
export const readLease = async () => (await custom.getNamespacedCustomObject(lease)) as LeaseBody;

export function elector(identity: string, extra: Partial<LeaderElectionOptions> = {}): LeaderElector {
  return createLeaderElector({ kubeConfig, namespace: NS, identity, ...FAST, ...extra });
}

/** Starts `run`, with a `lead` that records its calls and holds leadership until its signal aborts. */
export function campaign(e: LeaderElector, lead?: (signal: AbortSignal) => Promise<void>) {
  const signals: AbortSignal[] = [];
  const stop = new AbortController();
  const done = e.run(async (signal) => {
    signals.push(signal);
    await (lead ?? aborted)(signal);
  }, stop.signal);
  runs.push({ stop, done });
  return { signals, stop, done };
}

/** Another instance, played by the test: it holds the Lease and renews it (by its clock) until stopped. */
export async function otherHolder(holderIdentity: string, clock = () => new Date()) {
  const write = async () => {
    const time = formatMicroTime(clock());
    const current = (await custom.getNamespacedCustomObject(lease).catch(() => undefined)) as LeaseBody | undefined;
    const spec = { ...current?.spec, holderIdentity, leaseDurationSeconds: 2, renewTime: time };
    if (current?.spec.holderIdentity !== holderIdentity) Object.assign(spec, { acquireTime: time });
    const body = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: NAME, ...current?.metadata }, spec };
    await custom.replaceNamespacedCustomObject({ ...lease, body });
  };
  const writeUntilDone = async () => {
    // the elector may write between our read and our write (409): read again
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
      }
    }
  };
  await writeUntilDone();
  let renewing = true;
  const loop = (async () => {
    while (renewing) {
      await pause(300);
      if (renewing) await writeUntilDone();
    }
  })();
  return async () => {
    renewing = false;
    await loop;
  };
}
