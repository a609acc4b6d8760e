import { lstat } from "node:fs/promises";
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
 * an AgentUnavailableError; the binary then answers "try again later" (CNI code 11), or runs the
 * call itself when the agent is not running and not required (safe: ADD and DEL are idempotent
 * per attachment). A call that timed out is never run again directly: its budget is spent, and the
 * agent does not perform it past its deadline.
 */
export class AgentUnavailableError extends Error {
  override readonly name = "AgentUnavailableError";
  constructor(
    readonly socketPath: string,
    /**
     * `unreachable`: nothing listens (no socket file, refused); `failed`: connected, then no valid
     * answer; `timeout`: no answer before the deadline; `refused`: the socket is not the agent's
     * (served by a uid that is neither root nor the allowed one).
     */
    readonly kind: "unreachable" | "failed" | "timeout" | "refused",
    message: string,
  ) {
    super(`ipamkit agent at ${socketPath}: ${message}`);
  }
}

export interface ForwardOptions {
  socketPath: string;
  env: Readonly<Record<string, string | undefined>>;
  stdin: string;
  /** Whole-call bound in ms (default 25 000, or what `deadline` leaves); sent to the agent as the call's deadline. */
  timeoutMs?: number;
  /** The call's deadline (epoch ms); wins over timeoutMs. */
  deadline?: number;
  /**
   * Refuse a socket file owned by any other uid (Node cannot read SO_PEERCRED; the native binary
   * checks the peer itself). The message names `agent_uid` as the setting that allows one more uid.
   */
  allowedUids?: readonly number[];
}

export const DEFAULT_FORWARD_TIMEOUT_MS = 25_000;

/** Sends one CNI call to the agent and returns what the plugin would have printed. */
export async function forwardToAgent(options: ForwardOptions): Promise<AgentResponse> {
  const deadline = options.deadline ?? Date.now() + (options.timeoutMs ?? DEFAULT_FORWARD_TIMEOUT_MS);
  if (options.allowedUids !== undefined) await checkOwner(options.socketPath, options.allowedUids);
  const request: AgentRequest = { v: PROTOCOL_VERSION, env: cniEnvOf(options.env), stdin: options.stdin, deadline };
  return exchange(options.socketPath, request, Math.max(1, deadline - Date.now()));
}

/** The uid serving the socket (its file's owner) must be an allowed one. */
async function checkOwner(socketPath: string, allowed: readonly number[]): Promise<void> {
  let uid: number;
  try {
    // the promise lstat, as in socket-file.ts (nodejs/node#51142)
    uid = (await lstat(socketPath)).uid;
  } catch (error) {
    throw new AgentUnavailableError(socketPath, "unreachable", (error as NodeJS.ErrnoException).code ?? (error as Error).message);
  }
  if (allowed.includes(uid)) return;
  const extra = allowed.filter((u) => u !== 0);
  throw new AgentUnavailableError(
    socketPath,
    "refused",
    `refusing it: the socket is served by uid ${uid}, which is neither root nor agent_uid (${extra.length === 0 ? "unset" : extra.join(", ")})`,
  );
}

/** The agent's counters (requests, exit codes, conflicts, …) as JSON-decoded stats. */
export async function agentStats(socketPath: string, timeoutMs = 5_000): Promise<Record<string, unknown>> {
  const answer = await exchange(socketPath, { v: PROTOCOL_VERSION, op: "stats" }, timeoutMs);
  return JSON.parse(answer.stdout) as Record<string, unknown>;
}

function exchange(socketPath: string, request: AgentRequest | AgentStatsRequest, timeoutMs: number): Promise<AgentResponse> {
  return new Promise((resolve, reject) => {
    let connected = false;
    let answer = "";
    let settled = false;
    const socket = connect(socketPath);
    const fail = (kind: AgentUnavailableError["kind"], message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(new AgentUnavailableError(socketPath, kind, message));
    };
    // a whole-call bound, not an idle one: an agent that trickles bytes is still given up on
    const timer = setTimeout(() => fail("timeout", "timed out"), timeoutMs);
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
      clearTimeout(timer);
      resolve(parsed);
    });
  });
}
