import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { type Exclusive, type PoolRef, StoreConflictError, StoreUnavailableError } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import { createObjectApi, type ObjectApi } from "./api.js";
import { STORE_NAME } from "./errors.js";
import { formatMicroTime } from "./microtime.js";
import { ipPoolName } from "./names.js";
import type { Kind, KubeObject } from "./objects.js";
import { loadKubeConfig, resolveNamespace } from "./options.js";

/**
 * Whereabouts' own coordination, taken part in: Whereabouts (v0.5-v0.9) holds the cluster-wide
 * Lease `whereabouts` (client-go leader election: 1 s lease, renewed every 0.5 s, released on
 * completion) around its ORIP check, pool patch and ORIP create. Holding it around our own claim
 * and pool writes keeps our claim from landing inside that window, where Whereabouts' create fails
 * with AlreadyExists. Correctness never depends on it: every write stays compare-and-swapped.
 */
export interface WhereaboutsLeaseOptions {
  /** A kubeconfig file, a loaded KubeConfig, or client-node's defaults (as the store). */
  kubeconfig?: string | KubeConfig;
  /** The pool namespace (the Lease lives there); default: as the store resolves it. */
  namespace?: string;
  /** Lease name; default "whereabouts", or the node's pool's name when `pool` is given. */
  name?: string;
  /**
   * Node-slice mode: the node's slice pool. Whereabouts then takes the Lease named after that pool's
   * IPPool (`<network>-<node>-<slice>`) instead of `whereabouts`, and so does this.
   */
  pool?: PoolRef;
  /** holderIdentity; default `ipamkit/<podRef or "cni">/<random>` — unique per hold. */
  identity?: string;
  /** Give up acquiring at this time (epoch ms); default `timeoutMs` from each acquisition's start. */
  deadline?: number;
  /** Wait at most this long to acquire when no `deadline` is given; default 60 000. */
  timeoutMs?: number;
  /** leaseDurationSeconds written; default 1, as Whereabouts (LeaseDuration 1500 ms). */
  leaseDurationSeconds?: number;
  /** Pause between attempts, and between renewals while held; default 500 ms, as Whereabouts. */
  retryPeriodMs?: number;
  /** Pause between reads while another holds it; default 200 ms (x1-1.2 jitter). */
  pollMs?: number;
  /** Per-request timeout; default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Clock for acquireTime/renewTime (expiry is judged on the monotonic clock). */
  now?: () => Date;
  /**
   * Take part only while Whereabouts runs: each hold first reads the Lease and takes it only when
   * Whereabouts wrote it within `activeWithinMs` (default {@link WHEREABOUTS_ACTIVE_WITHIN_MS});
   * otherwise `fn` runs without it, at the cost of that one read. Absent: always take it.
   */
  auto?: { activeWithinMs?: number };
}

/** How long after Whereabouts last wrote its Lease ipamkit keeps taking part (auto mode): one hour. */
export const WHEREABOUTS_ACTIVE_WITHIN_MS = 3_600_000;

/**
 * Annotations ipamkit keeps on the Lease. `renew-time`: the spec.renewTime of ipamkit's own last
 * write (client-go keeps annotations it read when it writes the spec, so a renewTime that differs
 * means another writer, Whereabouts, came since). `whereabouts-seen`: the latest time such a
 * write was seen (kept while ipamkit's own writes follow).
 */
export const LEASE_ANNOTATION = { renewTime: "ipamkit.io/renew-time", whereaboutsSeen: "ipamkit.io/whereabouts-seen" } as const;

/** The Lease could not be acquired before the call's deadline. Retryable (CNI code 11). */
export class LeaseUnavailableError extends StoreUnavailableError {
  constructor(
    readonly lease: string,
    readonly holder: string,
    waitedMs: number,
  ) {
    super(`Lease ${lease} still held by ${holder || "?"} after waiting ${Math.round(waitedMs)} ms: try again later`, {
      component: STORE_NAME,
    });
  }
}

const LEASE: Kind = { kind: "Lease", plural: "leases", group: "coordination.k8s.io", version: "v1" };

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  [field: string]: unknown;
}
type Lease = KubeObject & { spec?: LeaseSpec };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A write that lost a race (409) is `undefined`. */
async function attempt(write: () => Promise<KubeObject>): Promise<Lease | undefined> {
  try {
    return (await write()) as Lease;
  } catch (error) {
    if (error instanceof StoreConflictError) return undefined;
    throw error;
  }
}

/** What one whereaboutsLease's holds share: its options, as resolved when it was made. */
interface LeaseContext {
  /** The caller's options, read again on each hold for identity, deadline, timeouts and polling. */
  readonly options: WhereaboutsLeaseOptions;
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly name: string;
  readonly durationSeconds: number;
  readonly retryPeriodMs: number;
  readonly now: () => Date;
  /** `namespace/name`, for errors. */
  readonly label: string;
}

function createLeaseContext(options: WhereaboutsLeaseOptions): LeaseContext {
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const namespace = resolveNamespace(kubeConfig, options.namespace);
  const name = options.name ?? (options.pool === undefined ? "whereabouts" : ipPoolName(options.pool));
  return {
    options,
    kubeConfig,
    namespace,
    name,
    durationSeconds: options.leaseDurationSeconds ?? 1,
    retryPeriodMs: options.retryPeriodMs ?? 500,
    now: options.now ?? (() => new Date()),
    label: `${namespace}/${name}`,
  };
}

/**
 * An {@link Exclusive} over the Whereabouts Lease: each call acquires it (as client-go does: CAS
 * on resourceVersion; taken when free, or when the record has not changed for its
 * leaseDurationSeconds since first observed), renews it while `fn` runs, and releases it after by
 * writing an empty holderIdentity (ReleaseOnCancel). Past the deadline: LeaseUnavailableError.
 */
export function whereaboutsLease(options: WhereaboutsLeaseOptions = {}): Exclusive {
  const ctx = createLeaseContext(options);
  return <T>(fn: () => Promise<T>): Promise<T> => hold(ctx, fn);
}

/** One call of the Exclusive: acquire, run `fn` while renewing, release. */
async function hold<T>(ctx: LeaseContext, fn: () => Promise<T>): Promise<T> {
  const { options, kubeConfig, namespace } = ctx;
  const identity = options.identity ?? `ipamkit/cni/${randomBytes(4).toString("hex")}`;
  const api = createObjectApi({ kubeConfig, namespace, requestTimeoutMs: options.requestTimeoutMs ?? 10_000, pageSize: 1 });
  try {
    if (options.auto !== undefined) {
      // a read that fails (no RBAC for leases, a timeout) cannot show Whereabouts: go on without
      // the Lease, which only spares Whereabouts a retry; correctness is the compare-and-swap's
      const lease = (await api.get(LEASE, ctx.name).catch(() => undefined)) as Lease | undefined;
      const seen = whereaboutsSeen(lease);
      const within = options.auto.activeWithinMs ?? WHEREABOUTS_ACTIVE_WITHIN_MS;
      if (seen === undefined || ctx.now().getTime() - seen > within) return await fn();
    }
    const started = performance.now();
    const deadline = options.deadline ?? Date.now() + (options.timeoutMs ?? 60_000);
    const renewal = renew(ctx, api, await acquire(ctx, api, identity, deadline, started));
    try {
      return await fn();
    } finally {
      await release(ctx, api, await renewal.stop(), identity);
    }
  } finally {
    api.close();
  }
}

/**
 * Renews the `acquired` Lease every retryPeriodMs until stopped or a renewal fails; `stop` ends
 * the wait at once and resolves to the Lease as last written.
 */
function renew(ctx: LeaseContext, api: ObjectApi, acquired: Lease): { stop: () => Promise<Lease> } {
  let held = acquired;
  let wake = () => {};
  let stop = false;
  const renewing = (async () => {
    while (!stop) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ctx.retryPeriodMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stop) break;
      // a lost renewal is not an error: correctness is the CAS's, the Lease only spares Whereabouts
      const spec = { ...held.spec, renewTime: formatMicroTime(ctx.now()) };
      const renewed = await attempt(() => api.replace(LEASE, ours(held, spec))).catch(() => undefined);
      if (renewed === undefined) break;
      held = renewed;
    }
  })();
  return {
    async stop() {
      stop = true;
      wake();
      await renewing;
      return held;
    },
  };
}

function holding(ctx: LeaseContext, identity: string, lease: Lease | undefined): LeaseSpec {
  const time = formatMicroTime(ctx.now());
  return {
    holderIdentity: identity,
    leaseDurationSeconds: ctx.durationSeconds,
    acquireTime: time,
    renewTime: time,
    // client-go counts every change of holder; ours is a new identity on each hold
    leaseTransitions: lease === undefined ? 0 : (lease.spec?.leaseTransitions ?? 0) + 1,
  };
}

async function acquire(ctx: LeaseContext, api: ObjectApi, identity: string, deadline: number, started: number): Promise<Lease> {
  const { name } = ctx;
  let observed = { record: "", at: 0 };
  let holder = "";
  for (;;) {
    const lease = (await api.get(LEASE, name)) as Lease | undefined;
    if (lease === undefined) {
      const created = await attempt(() =>
        api.create(
          LEASE,
          ours({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name } }, holding(ctx, identity, undefined)),
        ),
      );
      if (created !== undefined) return created;
      continue; // someone created it first: read it
    }
    const spec = lease.spec ?? {};
    const record = [spec.holderIdentity, spec.renewTime, lease.metadata?.resourceVersion].join("|");
    if (record !== observed.record) observed = { record, at: performance.now() };
    holder = spec.holderIdentity ?? "";
    const validMs = (spec.leaseDurationSeconds ?? ctx.durationSeconds) * 1000;
    if (holder === "" || performance.now() - observed.at >= validMs) {
      const taken = await attempt(() => api.replace(LEASE, ours(lease, { ...spec, ...holding(ctx, identity, lease) })));
      if (taken !== undefined) return taken;
      continue; // lost the race: read again at once
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new LeaseUnavailableError(ctx.label, holder, performance.now() - started);
    // a holder releases on completion; jitter keeps waiters from polling in lockstep
    await sleep(Math.min((ctx.options.pollMs ?? 200) * (1 + Math.random() * 0.2), left));
  }
}

async function release(ctx: LeaseContext, api: ObjectApi, held: Lease, identity: string): Promise<void> {
  const time = formatMicroTime(ctx.now());
  const spec = { ...held.spec, holderIdentity: "", leaseDurationSeconds: 1, acquireTime: time, renewTime: time };
  if ((await attempt(() => api.replace(LEASE, ours(held, spec))).catch(() => undefined)) !== undefined) return;
  // changed since our last write (a renewal raced, or it was taken after expiring): release only if still ours
  const lease = (await api.get(LEASE, ctx.name).catch(() => undefined)) as Lease | undefined;
  if (lease?.spec?.holderIdentity !== identity) return;
  await attempt(() => api.replace(LEASE, ours(lease, { ...lease.spec, ...spec }))).catch(() => undefined);
}

/** Epoch ms of a Lease time (MicroTime text), or undefined. */
function timeOf(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * When Whereabouts last wrote the Lease, as far as it shows: its renewTime when the last write was
 * not ipamkit's (the annotation does not match it), else the time ipamkit recorded; undefined when
 * it never did (or there is no Lease: Whereabouts creates it on its first ADD).
 */
export function whereaboutsSeen(lease: Lease | undefined): number | undefined {
  if (lease === undefined) return undefined;
  const annotations = lease.metadata?.annotations ?? {};
  const renewTime = lease.spec?.renewTime;
  const recorded = timeOf(annotations[LEASE_ANNOTATION.whereaboutsSeen]);
  if (renewTime !== undefined && renewTime !== annotations[LEASE_ANNOTATION.renewTime]) {
    const last = timeOf(renewTime);
    return last === undefined ? recorded : Math.max(last, recorded ?? 0);
  }
  return recorded;
}

/** The Lease as ipamkit writes it: `spec`, its renewTime marked as ipamkit's, and when Whereabouts was last seen. */
function ours(lease: Lease, spec: LeaseSpec): Lease {
  const seen = whereaboutsSeen(lease);
  const annotations: Record<string, string> = { ...(lease.metadata?.annotations ?? {}) };
  if (spec.renewTime !== undefined) annotations[LEASE_ANNOTATION.renewTime] = spec.renewTime;
  if (seen !== undefined) annotations[LEASE_ANNOTATION.whereaboutsSeen] = new Date(seen).toISOString();
  return { ...lease, metadata: { ...lease.metadata, annotations }, spec };
}
