import { findFlatFile } from "./config-paths.js";
import type { ConfigFs } from "./types.js";

export interface AgentSettings {
  socket: string;
  required: boolean;
  /** `agent_timeout`: the whole call's bound in seconds, when set and valid (else AGENT_TIMEOUT_DEFAULT_SECONDS). */
  timeoutSeconds?: number;
  /** `agent_uid`: besides root, the uid the agent may run as. */
  uid?: number;
}

/** A call through the agent is answered within this many seconds unless `agent_timeout` says otherwise (kubelet allows ~4 min per sandbox, but retries sooner). */
export const AGENT_TIMEOUT_DEFAULT_SECONDS = 25;
/** The largest `agent_timeout`: kubelet's budget for a CNI call is of this order. */
export const AGENT_TIMEOUT_MAX_SECONDS = 30;
/** A config or flat file whose arrays and objects nest deeper than this is unreadable for routing (the binary's reader stops there). */
export const ROUTE_JSON_MAX_NESTING = 512;
/** The longest `agent_socket` the binary reads, in UTF-8 bytes (Linux's PATH_MAX less the terminator). */
export const AGENT_SOCKET_MAX_BYTES = 4095;

/**
 * The keys only the node decides, read from the node's flat file and never from a network config:
 * which socket root's binary talks to, which uid it trusts there, and whether it may run a call
 * itself. A NetworkAttachmentDefinition that sets them is ignored (config-node-keys.ts warns).
 */
export const NODE_AGENT_KEYS = ["agent_socket", "agent_required", "agent_uid"] as const;

/** A valid `agent_timeout` value: a number of seconds in (0, AGENT_TIMEOUT_MAX_SECONDS]. */
export function isAgentTimeout(value: unknown): value is number {
  return typeof value === "number" && value > 0 && value <= AGENT_TIMEOUT_MAX_SECONDS;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The deepest nesting of arrays and objects in a JSON text that parsed (strings skipped). */
export function jsonNesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/** JSON.parse, or undefined when the text is not JSON or nests deeper than ROUTE_JSON_MAX_NESTING. */
function readJson(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return jsonNesting(text) > ROUTE_JSON_MAX_NESTING ? undefined : value;
  } catch {
    return undefined;
  }
}

/** The node's flat file as an object ({} when there is none, or it is untrusted or unreadable: the direct path reports it). */
export function nodeFlatObject(fs: ConfigFs): Record<string, unknown> {
  try {
    const path = findFlatFile(fs, fs.configurationPath);
    if (path === undefined || fs.untrusted?.(path) !== undefined) return {};
    const parsed = readJson(fs.readText(path));
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/**
 * The routing rule: does this call go to the node-local agent? `agent_socket`, `agent_required`
 * and `agent_uid` from the node's flat file only; `agent_timeout` from the inline `ipam` block,
 * else the flat file. Anything unreadable → undefined: the direct path then loads the config
 * properly and reports what is wrong with it. Applied at run time only by the native binary
 * (examples/cni-plugin/src/forwarder-route.h, its bounds generated from this file), whose
 * differential test checks it against this function byte for byte; the agent and direct mode never
 * route a call again.
 */
export function agentSettings(stdin: string, fs: ConfigFs): AgentSettings | undefined {
  const conf = readJson(stdin);
  if (!isObject(conf) || !isObject(conf.ipam)) return undefined;
  const inline = conf.ipam;
  const flat = nodeFlatObject(fs);
  const socket = flat.agent_socket;
  if (typeof socket !== "string" || !socket.startsWith("/") || socket.includes("\0")) return undefined;
  if (Buffer.byteLength(socket, "utf8") > AGENT_SOCKET_MAX_BYTES) return undefined;
  const timeout = inline.agent_timeout !== undefined && inline.agent_timeout !== "" ? inline.agent_timeout : flat.agent_timeout;
  const uid = flat.agent_uid;
  return {
    socket,
    required: flat.agent_required === true,
    ...(isAgentTimeout(timeout) ? { timeoutSeconds: timeout } : {}),
    ...(Number.isSafeInteger(uid) && (uid as number) >= 0 ? { uid: uid as number } : {}),
  };
}
