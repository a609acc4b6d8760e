import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { InvalidRequestError, StoreConflictError } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import { createObjectApi } from "./api.js";
import type { Kind, KubeObject } from "./objects.js";

/** What the elector logs to (a pino logger fits). */
export interface ElectionLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  info(message: string): void;
  warn(fields: object, message: string): void;
  warn(message: string): void;
  child(bindings: Record<string, string>): ElectionLogger;
}

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
  logger?: ElectionLogger;
  /** Clock for the Lease's acquireTime/renewTime (expiry is judged on the monotonic clock). */
  now?: () => Date;
}

const GROUP = "coordination.k8s.io";
const VERSION = "v1";

/** The parts of a coordination.k8s.io/v1 Lease used here; the rest of a read Lease is written back as read. */
export interface Lease {
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

export interface Settings {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  requestTimeoutMs: number;
}

export function settingsOf(options: LeaderElectionOptions): Settings {
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
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
 * GET/create/PUT of the one Lease through the object API (plain bodies over CustomObjectsApi): the
 * typed CoordinationV1Api would turn Date fields into 3-digit times, which the API server refuses
 * (see microtime.ts). A write that lost a race (409, StoreConflictError) is `undefined`, not an error.
 */
export function leaseClient(kubeConfig: KubeConfig, settings: Settings) {
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

export type LeaseClient = ReturnType<typeof leaseClient>;

/** A logger that drops everything. */
export const silentLogger: ElectionLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  child: () => silentLogger,
};
