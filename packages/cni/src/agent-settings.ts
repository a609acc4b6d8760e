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

/** A valid `agent_timeout` value: a number of seconds in (0, AGENT_TIMEOUT_MAX_SECONDS]. */
export function isAgentTimeout(value: unknown): value is number {
  return typeof value === "number" && value > 0 && value <= AGENT_TIMEOUT_MAX_SECONDS;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The routing rule: does this call go to the node-local agent? `agent_socket` / `agent_required`
 * from the inline `ipam` block, else from the flat file (inline wins, as for every key). Anything
 * unreadable → undefined: the direct path then loads the config properly and reports what is wrong
 * with it. Applied at run time only by the native binary (examples/cni-plugin/src/forwarder-route.h,
 * its bounds generated from this file), whose tests check it against this function; the agent and
 * direct mode never route a call again.
 */
export function agentSettings(stdin: string, fs: ConfigFs): AgentSettings | undefined {
  let conf: unknown;
  try {
    conf = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  if (!isObject(conf) || !isObject(conf.ipam)) return undefined;
  const inline = conf.ipam;
  let flat: Record<string, unknown> = {};
  try {
    const path = findFlatFile(fs, typeof inline.configuration_path === "string" ? inline.configuration_path : undefined);
    const parsed: unknown = path === undefined ? undefined : JSON.parse(fs.readText(path));
    if (isObject(parsed)) flat = parsed;
  } catch {
    // an unreadable flat file is the direct path's to report
  }
  const pick = (key: string) => (inline[key] !== undefined && inline[key] !== "" ? inline[key] : flat[key]);
  const socket = pick("agent_socket");
  const required = pick("agent_required");
  if (typeof socket !== "string" || !socket.startsWith("/")) return undefined;
  const timeout = pick("agent_timeout");
  const uid = pick("agent_uid");
  return {
    socket,
    required: required === true,
    ...(isAgentTimeout(timeout) ? { timeoutSeconds: timeout } : {}),
    ...(Number.isSafeInteger(uid) && (uid as number) >= 0 ? { uid: uid as number } : {}),
  };
}
