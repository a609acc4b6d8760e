import { connect } from "node:net";
import {
  type AgentRequest,
  type AgentResponse,
  type AgentStatsRequest,
  cniEnvOf,
  isResponse,
  MAX_REQUEST_BYTES,
  PROTOCOL_VERSION,
} from "./protocol.js";

/**
 * The CNI binary's side: node:net only, so that forwarding loads no store client. Every failure is
 * an AgentUnavailableError; the binary then runs the call itself (safe: ADD and DEL are idempotent
 * per attachment, so a call the agent finished but could not answer gives the same result again)
 * or, when the agent is required, answers "try again later" (CNI code 11).
 */
export class AgentUnavailableError extends Error {
  override readonly name = "AgentUnavailableError";
  constructor(
    readonly socketPath: string,
    /** `unreachable`: nothing listens (no socket file, refused); `failed`: connected, then no valid answer. */
    readonly kind: "unreachable" | "failed",
    message: string,
  ) {
    super(`ipamkit agent at ${socketPath}: ${message}`);
  }
}

export interface ForwardOptions {
  socketPath: string;
  env: Readonly<Record<string, string | undefined>>;
  stdin: string;
  /** Whole-call deadline (default 60 000 ms; the agent queues calls of one pool). */
  timeoutMs?: number;
}

/** Sends one CNI call to the agent and returns what the plugin would have printed. */
export function forwardToAgent(options: ForwardOptions): Promise<AgentResponse> {
  const request: AgentRequest = { v: PROTOCOL_VERSION, env: cniEnvOf(options.env), stdin: options.stdin };
  return exchange(options.socketPath, request, options.timeoutMs);
}

/** The agent's counters (requests, exit codes, conflicts, …) as JSON-decoded stats. */
export async function agentStats(socketPath: string, timeoutMs = 5_000): Promise<Record<string, unknown>> {
  const answer = await exchange(socketPath, { v: PROTOCOL_VERSION, op: "stats" }, timeoutMs);
  return JSON.parse(answer.stdout) as Record<string, unknown>;
}

function exchange(socketPath: string, request: AgentRequest | AgentStatsRequest, timeoutMs: number | undefined): Promise<AgentResponse> {
  return new Promise((resolve, reject) => {
    let connected = false;
    let answer = "";
    let settled = false;
    const socket = connect(socketPath);
    const fail = (kind: "unreachable" | "failed", message: string) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(new AgentUnavailableError(socketPath, kind, message));
    };
    socket.setTimeout(timeoutMs ?? 60_000, () => fail(connected ? "failed" : "unreachable", "timed out"));
    socket.setEncoding("utf8");
    socket.on("connect", () => {
      connected = true;
      socket.end(`${JSON.stringify(request)}\n`);
    });
    socket.on("data", (chunk: string) => {
      answer += chunk;
      if (answer.length > MAX_REQUEST_BYTES) fail("failed", "answer too large");
    });
    socket.on("error", (error: NodeJS.ErrnoException) => fail(connected ? "failed" : "unreachable", error.code ?? error.message));
    socket.on("close", () => {
      if (settled) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer);
      } catch {
        return fail("failed", answer === "" ? "closed without an answer" : "answer is not JSON");
      }
      if (!isResponse(parsed)) return fail("failed", "answer is not a response of this protocol");
      settled = true;
      resolve(parsed);
    });
  });
}
