import { delegatingStore, type IpamStore, StoreConflictError } from "@ipamkit/core";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AgentResponse } from "./protocol.js";
import type { AgentStats } from "./server.js";

// @ipamkit/agent/metrics: a subpath of its own, so that an agent without metrics never loads prom-client
export type { MetricsServer, MetricsServerOptions } from "./metrics-http.js";
export { parseListenAddress, startMetricsServer } from "./metrics-http.js";

/** One answered CNI call, as the agent reports it to {@link AgentMetrics.onCall}. */
export interface CallRecord {
  /** CNI_COMMAND (ADD, DEL, CHECK, GC, STATUS, VERSION). */
  command: string;
  response: AgentResponse;
  /** From the request read to the answer. */
  seconds: number;
}

export interface AgentMetrics {
  readonly registry: Registry;
  /** Counts one answered call (startAgent's `onCall`). */
  onCall(call: CallRecord): void;
  /** The store with every request counted by operation and result (wraps openStore's answer). */
  countStore(store: IpamStore): IpamStore;
  /** Reads an agent's own counters (conflicts retried, in flight, stores) at every scrape; several agents are summed. */
  watch(stats: () => AgentStats): void;
}

const COMMANDS = new Set(["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"]);

/** The CNI result code of an answer: 0, or the error JSON's `code` (e.g. 11 try again later). */
export function resultCode(response: AgentResponse): string {
  if (response.exitCode === 0) return "0";
  try {
    const code = (JSON.parse(response.stdout) as { code?: unknown }).code;
    return typeof code === "number" && Number.isInteger(code) ? String(code) : "unknown";
  } catch {
    return "unknown";
  }
}

type Op = "readPool" | "writePool" | "listPools" | "readClaim" | "readClaims" | "writeClaim" | "deleteClaim" | "listClaims" | "commit";
const OPS: readonly Op[] = [
  "readPool",
  "writePool",
  "listPools",
  "readClaim",
  "readClaims",
  "writeClaim",
  "deleteClaim",
  "listClaims",
  "commit",
];

/** Gauges and counters read from the watched agents' stats at each scrape. */
function statsMetrics(registry: Registry, agents: readonly (() => AgentStats)[]): void {
  const fromStats = (name: string, help: string, read: (s: AgentStats) => number, kind: "counter" | "gauge") => {
    const collect = function (this: Counter | Gauge) {
      const value = agents.reduce((sum, stats) => sum + read(stats()), 0);
      if (this instanceof Counter) {
        this.reset();
        this.inc(value);
      } else this.set(value);
    };
    if (kind === "counter") new Counter({ name, help, registers: [registry], collect });
    else new Gauge({ name, help, registers: [registry], collect });
  };
  fromStats(
    "ipamkit_store_conflicts_retried_total",
    "Compare-and-swap conflicts retried by core's retry helper.",
    (s) => s.conflicts,
    "counter",
  );
  fromStats("ipamkit_agent_calls_in_flight", "CNI calls being answered now.", (s) => s.inFlight, "gauge");
  fromStats("ipamkit_agent_stores", "Store clients kept open.", (s) => s.stores, "gauge");
  fromStats("ipamkit_agent_calls_expired_total", "Calls not performed: their caller's deadline had passed.", (s) => s.expired, "counter");
  fromStats(
    "ipamkit_agent_adds_undone_total",
    "ADDs finished past their caller's deadline and released again.",
    (s) => s.undone,
    "counter",
  );
  fromStats("ipamkit_agent_journal_replayed_total", "Journaled DELs replayed (released).", (s) => s.journal.replayed, "counter");
  fromStats(
    "ipamkit_agent_journal_replay_failures_total",
    "Replays of journaled DELs that failed (retried).",
    (s) => s.journal.failed,
    "counter",
  );
  fromStats(
    "ipamkit_agent_journal_dropped_total",
    "Journal records dropped unreplayed: unreadable, or failed too often (the reconciler frees them).",
    (s) => s.journal.dropped,
    "counter",
  );
  fromStats("ipamkit_agent_journal_pending", "Journaled DELs not yet replayed, after the last scan.", (s) => s.journal.pending, "gauge");
  fromStats(
    "ipamkit_agent_malformed_requests_total",
    "Requests that were not a CNI call the agent could read.",
    (s) => s.malformed,
    "counter",
  );
}

/**
 * The agent's Prometheus metrics, on a registry of their own: CNI calls by command and result
 * code, call latency, store requests by operation and result (a compare-and-swap that lost is
 * `conflict`), conflicts retried by core, calls in flight, open stores, and Node's process metrics.
 */
export function createAgentMetrics(): AgentMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "ipamkit_agent_" });
  const calls = new Counter({
    name: "ipamkit_cni_calls_total",
    help: "CNI calls answered by the agent, by command and CNI result code (0 success).",
    labelNames: ["command", "code"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "ipamkit_cni_call_duration_seconds",
    help: "Time from a CNI call's request to its answer, by command.",
    labelNames: ["command"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const requests = new Counter({
    name: "ipamkit_store_requests_total",
    help: "Requests to the store, by store, operation and result (ok, conflict: a compare-and-swap that lost, error).",
    labelNames: ["store", "op", "result"] as const,
    registers: [registry],
  });
  const agents: (() => AgentStats)[] = [];
  statsMetrics(registry, agents);

  const counted =
    <A extends unknown[], R>(store: string, op: Op, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        const out = await fn(...args);
        requests.inc({ store, op, result: "ok" });
        return out;
      } catch (error) {
        requests.inc({ store, op, result: error instanceof StoreConflictError ? "conflict" : "error" });
        throw error;
      }
    };

  return {
    registry,
    onCall({ command, response, seconds }) {
      const label = COMMANDS.has(command) ? command : "other";
      calls.inc({ command: label, code: resultCode(response) });
      duration.observe({ command: label }, seconds);
    },
    countStore(store) {
      // every request method of the store counted; its capabilities unchanged
      const overrides: Record<string, unknown> = {};
      for (const op of OPS) {
        const fn = store[op] as (...args: unknown[]) => Promise<unknown>;
        overrides[op] = counted(store.name, op, fn.bind(store));
      }
      return delegatingStore(store, overrides as Partial<IpamStore>);
    },
    watch(read) {
      agents.push(read);
    },
  };
}
