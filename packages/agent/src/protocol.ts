/**
 * The agent protocol: one request per connection, one JSON document each way, each ended by a
 * newline. The request carries what a runtime gives a CNI plugin (the CNI_* environment and stdin);
 * the answer is what the plugin would have printed and its exit code, so forwarding changes nothing
 * a runtime can see.
 *
 * The "raw" frame is for the native forwarder (examples/cni-plugin/src/forwarder.c), which parses
 * no JSON: its request adds `frame: "raw"` and `socket`, the agent_socket it found in stdin, and
 * the answer is a header line `raw <exit code> <stdout bytes> <stderr bytes>` followed by both
 * texts. The binary has decided that the call is the agent's (forwarder-route.h): the agent serves
 * every request it is given and never routes a call again.
 */
export const PROTOCOL_VERSION = 1;

/** Larger requests are refused (a CNI config is a few KiB; prevResult and GC lists stay far below). */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface AgentRequest {
  readonly v: typeof PROTOCOL_VERSION;
  /** The CNI_* variables of the invocation. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string;
  /** "raw": answer in the raw frame (see above). */
  readonly frame?: "raw";
  /** With frame "raw": the agent_socket the forwarder found in stdin and connected to (logged, not checked). */
  readonly socket?: string;
  /**
   * When the caller stops waiting (epoch milliseconds, this host's clock). The agent does not start
   * a call past it, and undoes an ADD that finished too late to be answered in time (server.ts).
   */
  readonly deadline?: number;
}

/** Asks for the agent's counters instead of running a CNI call; the answer's stdout is AgentStats JSON. */
export interface AgentStatsRequest {
  readonly v: typeof PROTOCOL_VERSION;
  readonly op: "stats";
}

export interface AgentResponse {
  readonly v: typeof PROTOCOL_VERSION;
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Only the CNI_* variables travel: the agent's own environment configures its clients. */
export function cniEnvOf(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (name.startsWith("CNI_") && value !== undefined) out[name] = value;
  return out;
}

/** Checks a decoded request; returns a reason when it is malformed. */
export function requestProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the request is not a JSON object";
  const r = value as Record<string, unknown>;
  if (r.v !== PROTOCOL_VERSION) return `unsupported protocol version ${JSON.stringify(r.v)} (this agent speaks ${PROTOCOL_VERSION})`;
  if (r.op !== undefined) return r.op === "stats" ? undefined : `unknown op ${JSON.stringify(r.op)}`;
  if (typeof r.stdin !== "string") return "stdin must be a string";
  if (r.frame !== undefined && r.frame !== "raw") return `unknown frame ${JSON.stringify(r.frame)}`;
  if (r.frame === "raw" && typeof r.socket !== "string") return "a raw-frame request must name its socket";
  if (r.deadline !== undefined && !(typeof r.deadline === "number" && Number.isFinite(r.deadline)))
    return "deadline must be a number (epoch ms)";
  if (typeof r.env !== "object" || r.env === null || Array.isArray(r.env)) return "env must be an object";
  for (const [name, v] of Object.entries(r.env)) {
    if (!name.startsWith("CNI_")) return `env may hold only CNI_* variables, not ${JSON.stringify(name)}`;
    if (typeof v !== "string") return `env.${name} must be a string`;
  }
  return undefined;
}

/** An answer in the raw frame: the header line, then stdout and stderr, lengths in UTF-8 bytes. */
export function rawFrame(response: AgentResponse): string {
  const { exitCode, stdout, stderr } = response;
  return `raw ${exitCode} ${Buffer.byteLength(stdout)} ${Buffer.byteLength(stderr)}\n${stdout}${stderr}`;
}

export function isResponse(value: unknown): value is AgentResponse {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return r.v === PROTOCOL_VERSION && Number.isInteger(r.exitCode) && typeof r.stdout === "string" && typeof r.stderr === "string";
}
