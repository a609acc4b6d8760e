import type { ConfigFs, IpamConfig, ReadNodeSlice } from "@ipamkit/cni";
import type { Exclusive, IpamStore, PoolRef } from "@ipamkit/core";
import type { Logger } from "pino";
import type { AgentResponse } from "./protocol.js";

export interface AgentOptions {
  socketPath: string;
  /** Opens the store a config selects; called once per store identity (see store-cache.ts). */
  openStore: (config: IpamConfig) => Promise<IpamStore>;
  /**
   * The lock an ADD holds when its config sets `whereabouts_lease` (the Kubernetes store's
   * `whereaboutsLease`), given up at `deadline` (epoch ms: the caller's, less the undo margin).
   */
  openExclusive?: (config: IpamConfig, identity: string, deadline?: number, pool?: PoolRef) => Exclusive;
  /** Reads a node's slice of a network with node slices (the Kubernetes store's NodeSlicePool). */
  readNodeSlice?: ReadNodeSlice;
  logger?: Logger;
  /** Flat-file access (default: this process's file system). */
  fs?: ConfigFs;
  /**
   * This node's name: for per-node blocks when a config sets no `node_name` (default: the host
   * name), and for node slices (after the call's NODENAME, which the forwarder does not pass on).
   */
  nodeName?: string;
  /** A connection that has not sent its whole request after this long is closed (default 10 000 ms). */
  idleTimeoutMs?: number;
  /** close() waits this long at most for the calls in flight (default 10 000 ms). */
  drainTimeoutMs?: number;
  /** Told of every answered CNI call (metrics.ts's onCall). */
  onCall?: (call: { command: string; response: AgentResponse; seconds: number }) => void;
  /**
   * The DEL journal (journal.ts): its directory is the node flat file's `agent_journal_dir` (else
   * the default), read at every scan. `false`: not read (no replay, no purge).
   */
  journal?: false | { scanIntervalMs?: number; maxAttempts?: number; retryMaxMs?: number };
}

export interface AgentStats {
  requests: number;
  /** By exit code: 0 answered, 1 a CNI error. */
  byExitCode: Record<string, number>;
  malformed: number;
  /** Requests answered in the raw frame (the native forwarder). */
  raw: number;
  inFlight: number;
  stores: number;
  /** Store write conflicts (retried). One queue per pool: these come from other nodes. */
  conflicts: number;
  /** Calls whose config was answered from the agent's config cache / prepared afresh. */
  configs: { cached: number; prepared: number };
  /** Calls not performed because their caller's deadline had passed. */
  expired: number;
  /** ADDs that finished past their caller's deadline and were undone (released again). */
  undone: number;
  /** Connections closed for sending no whole request within the idle timeout. */
  idleClosed: number;
  /** The DEL journal (journal.ts). */
  journal: JournalStats;
}

/** What the agent did with the DEL journal since it started. */
export interface JournalStats {
  /** Records whose DEL succeeded (and were removed). */
  replayed: number;
  /** Replays that failed (each retried later, up to the bound). */
  failed: number;
  /** Records dropped: unreadable, not a DEL, or failed too often (the reconciler frees their reservations). */
  dropped: number;
  /** Records in the journal after the last scan. */
  pending: number;
}

/** The counters an agent keeps itself (the rest of AgentStats is read from its caches). */
export type OwnStats = Omit<AgentStats, "stores" | "conflicts" | "configs">;

export function newStats(): OwnStats {
  return {
    requests: 0,
    byExitCode: {},
    malformed: 0,
    raw: 0,
    inFlight: 0,
    expired: 0,
    undone: 0,
    idleClosed: 0,
    journal: { replayed: 0, failed: 0, dropped: 0, pending: 0 },
  };
}

export interface Agent {
  readonly socketPath: string;
  stats(): AgentStats;
  /**
   * Stops accepting, closes idle connections, lets calls in flight finish (drainTimeoutMs at most),
   * closes the stores and removes the socket.
   */
  close(): Promise<void>;
}
