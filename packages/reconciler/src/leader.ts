import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { InvalidRequestError, StoreConflictError } from "@ipamkit/core";
import { createObjectApi, formatMicroTime, type Kind, type KubeObject } from "@ipamkit/storage-kubernetes";
import type { KubeConfig } from "@kubernetes/client-node";
import pino, { type Logger } from "pino";

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Lease name; default "ipamkit-reconciler". */
  name?: string;
  /** This instance's identity; default `${os.hostname()}_${random 8 hex}`. */
  identity?: string;
  /** How long a holder's Lease stays valid without renewal; default 15 s. */
  leaseDurationMs?: number;
  /** The leader gives up when no renewal succeeded for this long; default 10 s, < leaseDurationMs. */
  renewDeadlineMs?: number;
  /** Pause between attempts to acquire or renew; default 2 s, < renewDeadlineMs. */
  retryPeriodMs?: number;
  /** Per-request timeout; default 5 s. */
  requestTimeoutMs?: number;
  logger?: Logger;
  /** Clock for the Lease's acquireTime/renewTime (expiry is judged on the monotonic clock). */
  now?: () => Date;
}

export interface LeaderElector {
  readonly identity: string;
  isLeader(): boolean;
  /**
   * Campaigns until `signal` aborts. While this instance holds the Lease, `lead(leadSignal)` runs;
   * `leadSignal` aborts when leadership is lost (renewal failed for renewDeadlineMs, or another holder
   * is seen) or when `signal` aborts. After `lead` settles following a loss, campaigning resumes.
   * On `signal` abort: stop, and if leading, release the Lease (holderIdentity cleared /
   * leaseDurationSeconds 1 so another instance takes over at once), then resolve.
   * An error thrown by `lead` is logged and treated like a loss (lease released, campaign resumes).
   */
  run(lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void>;
}

const GROUP = "coordination.k8s.io";
const VERSION = "v1";

/** The parts of a coordination.k8s.io/v1 Lease used here; the rest of a read Lease is written back as read. */
interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [field: string]: unknown };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

interface Settings {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  requestTimeoutMs: number;
}

function settingsOf(options: LeaderElectionOptions): Settings {
  const settings: Settings = {
    namespace: options.namespace,
    name: options.name ?? "ipamkit-reconciler",
    identity: options.identity ?? `${hostname()}_${randomBytes(4).toString("hex")}`,
    leaseDurationMs: options.leaseDurationMs ?? 15_000,
    renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
    retryPeriodMs: options.retryPeriodMs ?? 2_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
  };
  for (const option of ["namespace", "name", "identity"] as const)
    if (typeof settings[option] !== "string" || settings[option] === "")
      throw new InvalidRequestError(`${option} must be a non-empty string`);
  for (const option of ["leaseDurationMs", "renewDeadlineMs", "retryPeriodMs", "requestTimeoutMs"] as const)
    if (!Number.isFinite(settings[option]) || settings[option] <= 0)
      throw new InvalidRequestError(`${option} must be a positive number, not ${settings[option]}`);
  if (settings.renewDeadlineMs >= settings.leaseDurationMs)
    throw new InvalidRequestError(
      `renewDeadlineMs (${settings.renewDeadlineMs}) must be less than leaseDurationMs (${settings.leaseDurationMs})`,
    );
  if (settings.retryPeriodMs >= settings.renewDeadlineMs)
    throw new InvalidRequestError(
      `retryPeriodMs (${settings.retryPeriodMs}) must be less than renewDeadlineMs (${settings.renewDeadlineMs})`,
    );
  return settings;
}

/** Resolves after `ms`, or at once when `signal` aborts; leaves no timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

const LEASE: Kind = { kind: "Lease", plural: "leases", group: GROUP, version: VERSION };

/**
 * GET/create/PUT of the one Lease through storage-kubernetes' object API (plain bodies over
 * CustomObjectsApi): the typed CoordinationV1Api would turn Date fields into 3-digit times, which
 * the API server refuses (see storage-kubernetes microtime.ts). A write that lost a race (409, StoreConflictError) is
 * `undefined`, not an error.
 */
function leaseClient(kubeConfig: KubeConfig, settings: Settings) {
  const { namespace, name } = settings;
  const api = createObjectApi({ kubeConfig, namespace, requestTimeoutMs: settings.requestTimeoutMs, pageSize: 1 });
  const write = async (request: () => Promise<KubeObject>): Promise<Lease | undefined> => {
    try {
      return (await request()) as Lease;
    } catch (error) {
      if (error instanceof StoreConflictError) return undefined;
      throw error;
    }
  };
  return {
    close: () => api.close(),
    get: async (): Promise<Lease | undefined> => (await api.get(LEASE, name)) as Lease | undefined,
    create: (spec: Lease["spec"]) =>
      write(() => api.create(LEASE, { apiVersion: `${GROUP}/${VERSION}`, kind: "Lease", metadata: { name }, spec } as KubeObject)),
    /** PUT guarded by the read Lease's resourceVersion. */
    replace: (read: Lease, spec: Lease["spec"]) =>
      write(() => api.replace(LEASE, { ...read, spec: { ...read.spec, ...spec } } as KubeObject)),
  };
}

type LeaseClient = ReturnType<typeof leaseClient>;

export function createLeaderElector(options: LeaderElectionOptions): LeaderElector {
  const settings = settingsOf(options);
  const { identity, retryPeriodMs, renewDeadlineMs } = settings;
  const logger = (options.logger ?? pino({ level: "silent" })).child({ lease: `${settings.namespace}/${settings.name}`, identity });
  const now = options.now ?? (() => new Date());
  const durationSeconds = Math.ceil(settings.leaseDurationMs / 1000);
  let leading = false;
  let running = false;

  // Expiry of another holder's Lease is judged the way client-go does (observedTime): by when THIS
  // process last saw the record change, on its own monotonic clock. Comparing the remote renewTime
  // with the local wall clock would let clock skew between nodes hand the Lease to two leaders.
  let observed = { record: "", at: 0 };
  const observe = (lease: Lease) => {
    const record = [lease.spec?.holderIdentity, lease.spec?.renewTime, lease.metadata?.resourceVersion].join("|");
    if (record !== observed.record) observed = { record, at: performance.now() };
  };
  const expired = (lease: Lease) => {
    // The holder's own promise (client-go >= 1.27 does the same); ours when it made none.
    const seconds = lease.spec?.leaseDurationSeconds;
    const validMs = typeof seconds === "number" && seconds > 0 ? seconds * 1000 : settings.leaseDurationMs;
    return performance.now() - observed.at >= validMs;
  };

  /** The spec that makes this instance the holder: a renewal if it already is, else a takeover. */
  const holding = (lease: Lease | undefined): Lease["spec"] => {
    const time = formatMicroTime(now());
    const spec = lease?.spec ?? {};
    const renewal = spec.holderIdentity === identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: renewal ? (spec.acquireTime ?? time) : time,
      renewTime: time,
      leaseTransitions: lease === undefined ? 0 : (spec.leaseTransitions ?? 0) + (renewal ? 0 : 1),
    };
  };

  /**
   * One client-go tryAcquireOrRenew: `held` when this instance now holds the Lease, `heldBy` when
   * another does (still valid, or it won the write race), `undefined` when it cannot tell yet.
   */
  async function tryAcquireOrRenew(
    client: LeaseClient,
    last: Lease | undefined,
  ): Promise<{ held: Lease } | { heldBy: string } | undefined> {
    if (last !== undefined) {
      // Renewal fast path: PUT at the resourceVersion we wrote; 409 means the Lease changed, so read it.
      const renewed = await client.replace(last, holding(last));
      if (renewed !== undefined) return { held: renewed };
    }
    const lease = await client.get();
    const written = lease === undefined ? await client.create(holding(undefined)) : undefined;
    if (written !== undefined) return { held: written };
    if (lease === undefined) return undefined; // someone created it first: read it next time
    observe(lease);
    const holder = lease.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== identity && !expired(lease)) return { heldBy: holder };
    const replaced = await client.replace(lease, holding(lease));
    return replaced === undefined ? undefined : { held: replaced };
  }

  async function release(client: LeaseClient): Promise<void> {
    try {
      const lease = await client.get();
      if (lease === undefined || lease.spec?.holderIdentity !== identity) return;
      const time = formatMicroTime(now());
      const released = await client.replace(lease, { holderIdentity: "", leaseDurationSeconds: 1, acquireTime: time, renewTime: time });
      if (released !== undefined) logger.info("released lease");
      else logger.warn("lease changed while releasing it; not released");
    } catch (error) {
      logger.warn({ err: error }, "releasing the lease failed; others take over once it expires");
    }
  }

  /** Runs `lead` while renewing the just-acquired `lease`; returns once `lead` has settled. */
  async function leadWhileHeld(client: LeaseClient, lease: Lease, lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal) {
    const leadership = new AbortController();
    const end = (reason: unknown) => {
      leading = false;
      leadership.abort(reason);
    };
    const lose = (reason: string) => {
      if (leadership.signal.aborted) return;
      logger.info({ reason }, "lost leadership");
      end(new Error(`leadership lost: ${reason}`));
    };
    const stop = () => end(signal.reason);
    signal.addEventListener("abort", stop);
    const missedDeadline = () => lose(`no renewal succeeded for ${renewDeadlineMs} ms`);
    let deadline = setTimeout(missedDeadline, renewDeadlineMs);
    leading = true;
    logger.info("became leader");

    const renewing = (async () => {
      let held: Lease | undefined = lease;
      while (!leadership.signal.aborted) {
        await sleep(retryPeriodMs, leadership.signal);
        if (leadership.signal.aborted) break;
        try {
          const result = await tryAcquireOrRenew(client, held);
          if (leadership.signal.aborted) break;
          held = result !== undefined && "held" in result ? result.held : undefined;
          if (held !== undefined) {
            clearTimeout(deadline);
            deadline = setTimeout(missedDeadline, renewDeadlineMs);
          } else if (result !== undefined && "heldBy" in result) lose(`lease held by ${result.heldBy}`);
        } catch (error) {
          held = undefined;
          logger.warn({ err: error }, "renewing the lease failed");
        }
      }
    })();

    try {
      await lead(leadership.signal);
      if (!leadership.signal.aborted) logger.info("lead returned while leading; giving up leadership");
    } catch (error) {
      logger.warn({ err: error }, "lead failed; giving up leadership");
    }
    end(undefined);
    clearTimeout(deadline);
    signal.removeEventListener("abort", stop);
    await renewing;
    // Not leading any more: if the record still names this instance, clear it so that another
    // instance need not wait for it to expire (a no-op when another holder took over).
    await release(client);
  }

  return {
    identity,
    isLeader: () => leading,
    async run(lead, signal) {
      if (running) throw new InvalidRequestError("run is already running on this elector");
      running = true;
      const client = leaseClient(options.kubeConfig, settings);
      try {
        while (!signal.aborted) {
          let acquired: Lease | undefined;
          try {
            const result = await tryAcquireOrRenew(client, undefined);
            if (result !== undefined && "held" in result) acquired = result.held;
            else if (result !== undefined) logger.debug({ holder: result.heldBy }, "lease held by another instance");
          } catch (error) {
            logger.warn({ err: error }, "acquiring the lease failed");
          }
          if (acquired !== undefined && !signal.aborted) await leadWhileHeld(client, acquired, lead, signal);
          else if (acquired !== undefined) await release(client);
          // jitter keeps candidates that started together from polling in lockstep
          await sleep(retryPeriodMs * (1 + Math.random() * 0.2), signal);
        }
      } finally {
        leading = false;
        running = false;
        client.close();
      }
    },
  };
}
