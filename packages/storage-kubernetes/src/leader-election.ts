import { performance } from "node:perf_hooks";
import { InvalidRequestError } from "@ipamkit/core";
import {
  type ElectionLogger,
  type LeaderElectionOptions,
  type Lease,
  type LeaseClient,
  leaseClient,
  type Settings,
  settingsOf,
  silentLogger,
  sleep,
} from "./leader-lease.js";
import { formatMicroTime } from "./microtime.js";

export type { ElectionLogger, LeaderElectionOptions } from "./leader-lease.js";

/** Leader election on a coordination.k8s.io/v1 Lease (the reconciler's `LeaderElector`). */
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

type Attempt = { held: Lease } | { heldBy: string } | undefined;

/** One campaign's state: the Lease client, and what this process last saw of the record. */
interface Campaign {
  settings: Settings;
  client: LeaseClient;
  logger: ElectionLogger;
  now: () => Date;
  /**
   * Expiry of another holder's Lease is judged the way client-go does (observedTime): by when THIS
   * process last saw the record change, on its own monotonic clock. Comparing the remote renewTime
   * with the local wall clock would let clock skew between nodes hand the Lease to two leaders.
   */
  observed: { record: string; at: number };
  leading: boolean;
}

function observe(campaign: Campaign, lease: Lease): void {
  const record = [lease.spec?.holderIdentity, lease.spec?.renewTime, lease.metadata?.resourceVersion].join("|");
  if (record !== campaign.observed.record) campaign.observed = { record, at: performance.now() };
}

function expired(campaign: Campaign, lease: Lease): boolean {
  // The holder's own promise (client-go >= 1.27 does the same); ours when it made none.
  const seconds = lease.spec?.leaseDurationSeconds;
  const validMs = typeof seconds === "number" && seconds > 0 ? seconds * 1000 : campaign.settings.leaseDurationMs;
  return performance.now() - campaign.observed.at >= validMs;
}

/** The spec that makes this instance the holder: a renewal if it already is, else a takeover. */
function holding(campaign: Campaign, lease: Lease | undefined): Lease["spec"] {
  const { identity, leaseDurationMs } = campaign.settings;
  const time = formatMicroTime(campaign.now());
  const spec = lease?.spec ?? {};
  const renewal = spec.holderIdentity === identity;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
    acquireTime: renewal ? (spec.acquireTime ?? time) : time,
    renewTime: time,
    leaseTransitions: lease === undefined ? 0 : (spec.leaseTransitions ?? 0) + (renewal ? 0 : 1),
  };
}

/**
 * One client-go tryAcquireOrRenew: `held` when this instance now holds the Lease, `heldBy` when
 * another does (still valid, or it won the write race), `undefined` when it cannot tell yet.
 */
async function tryAcquireOrRenew(campaign: Campaign, last: Lease | undefined): Promise<Attempt> {
  const { client } = campaign;
  if (last !== undefined) {
    // Renewal fast path: PUT at the resourceVersion we wrote; 409 means the Lease changed, so read it.
    const renewed = await client.replace(last, holding(campaign, last));
    if (renewed !== undefined) return { held: renewed };
  }
  const lease = await client.get();
  const written = lease === undefined ? await client.create(holding(campaign, undefined)) : undefined;
  if (written !== undefined) return { held: written };
  if (lease === undefined) return undefined; // someone created it first: read it next time
  observe(campaign, lease);
  const holder = lease.spec?.holderIdentity ?? "";
  if (holder !== "" && holder !== campaign.settings.identity && !expired(campaign, lease)) return { heldBy: holder };
  const replaced = await client.replace(lease, holding(campaign, lease));
  return replaced === undefined ? undefined : { held: replaced };
}

async function release(campaign: Campaign): Promise<void> {
  const { client, logger } = campaign;
  try {
    const lease = await client.get();
    if (lease === undefined || lease.spec?.holderIdentity !== campaign.settings.identity) return;
    const time = formatMicroTime(campaign.now());
    const released = await client.replace(lease, { holderIdentity: "", leaseDurationSeconds: 1, acquireTime: time, renewTime: time });
    if (released !== undefined) logger.info("released lease");
    else logger.warn("lease changed while releasing it; not released");
  } catch (error) {
    logger.warn({ err: error }, "releasing the lease failed; others take over once it expires");
  }
}

/** Renews `lease` every retry period until `leadership` aborts; `renewed` after each success, `lose` when another holds it. */
async function keepRenewing(
  campaign: Campaign,
  lease: Lease,
  leadership: AbortSignal,
  on: { renewed: () => void; lose: (reason: string) => void },
): Promise<void> {
  let held: Lease | undefined = lease;
  while (!leadership.aborted) {
    await sleep(campaign.settings.retryPeriodMs, leadership);
    if (leadership.aborted) break;
    try {
      const result = await tryAcquireOrRenew(campaign, held);
      if (leadership.aborted) break;
      held = result !== undefined && "held" in result ? result.held : undefined;
      if (held !== undefined) on.renewed();
      else if (result !== undefined && "heldBy" in result) on.lose(`lease held by ${result.heldBy}`);
    } catch (error) {
      held = undefined;
      campaign.logger.warn({ err: error }, "renewing the lease failed");
    }
  }
}

/** Runs `lead` while renewing the just-acquired `lease`; returns once `lead` has settled. */
async function leadWhileHeld(campaign: Campaign, lease: Lease, lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal) {
  const { logger } = campaign;
  const { renewDeadlineMs } = campaign.settings;
  const leadership = new AbortController();
  const end = (reason: unknown) => {
    campaign.leading = false;
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
  campaign.leading = true;
  logger.info("became leader");
  const renewed = () => {
    clearTimeout(deadline);
    deadline = setTimeout(missedDeadline, renewDeadlineMs);
  };
  const renewing = keepRenewing(campaign, lease, leadership.signal, { renewed, lose });
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
  await release(campaign);
}

/** Campaigns until `signal` aborts (LeaderElector.run). */
async function campaignUntil(campaign: Campaign, lead: (leadSignal: AbortSignal) => Promise<void>, signal: AbortSignal) {
  const { logger } = campaign;
  while (!signal.aborted) {
    let acquired: Lease | undefined;
    try {
      const result = await tryAcquireOrRenew(campaign, undefined);
      if (result !== undefined && "held" in result) acquired = result.held;
      else if (result !== undefined) logger.debug({ holder: result.heldBy }, "lease held by another instance");
    } catch (error) {
      logger.warn({ err: error }, "acquiring the lease failed");
    }
    if (acquired !== undefined && !signal.aborted) await leadWhileHeld(campaign, acquired, lead, signal);
    else if (acquired !== undefined) await release(campaign);
    // jitter keeps candidates that started together from polling in lockstep
    await sleep(campaign.settings.retryPeriodMs * (1 + Math.random() * 0.2), signal);
  }
}

/** Client-go style leader election on one Lease: acquire, renew every retry period, release on stop. */
export function createLeaderElector(options: LeaderElectionOptions): LeaderElector {
  const settings = settingsOf(options);
  const logger = (options.logger ?? silentLogger).child({ lease: `${settings.namespace}/${settings.name}`, identity: settings.identity });
  const now = options.now ?? (() => new Date());
  let current: Campaign | undefined;
  return {
    identity: settings.identity,
    isLeader: () => current?.leading === true,
    async run(lead, signal) {
      if (current !== undefined) throw new InvalidRequestError("run is already running on this elector");
      const campaign: Campaign = {
        settings,
        client: leaseClient(options.kubeConfig, settings),
        logger,
        now,
        observed: { record: "", at: 0 },
        leading: false,
      };
      current = campaign;
      try {
        await campaignUntil(campaign, lead, signal);
      } finally {
        campaign.leading = false;
        current = undefined;
        campaign.client.close();
      }
    },
  };
}
