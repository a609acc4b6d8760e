/**
 * The agent protocol: one request per connection, one JSON document each way, each ended by a
 * newline. The request carries what a runtime gives a CNI plugin (the CNI_* environment and stdin);
 * the answer is what the plugin would have printed and its exit code, so forwarding changes nothing
 * a runtime can see.
 */
export const PROTOCOL_VERSION = 1;

/** Larger requests are refused (a CNI config is a few KiB; prevResult and GC lists stay far below). */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface AgentRequest {
  readonly v: typeof PROTOCOL_VERSION;
  /** The CNI_* variables of the invocation. */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: string;
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
  if (typeof r.env !== "object" || r.env === null || Array.isArray(r.env)) return "env must be an object";
  for (const [name, v] of Object.entries(r.env)) {
    if (!name.startsWith("CNI_")) return `env may hold only CNI_* variables, not ${JSON.stringify(name)}`;
    if (typeof v !== "string") return `env.${name} must be a string`;
  }
  return undefined;
}

export function isResponse(value: unknown): value is AgentResponse {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return r.v === PROTOCOL_VERSION && Number.isInteger(r.exitCode) && typeof r.stdout === "string" && typeof r.stderr === "string";
}
