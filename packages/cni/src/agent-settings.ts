import { findFlatFile } from "./config-paths.js";
import type { ConfigFs } from "./types.js";

export interface AgentSettings {
  socket: string;
  required: boolean;
}

/**
 * File access that asks about each file once: the flat file is looked up for `agent_socket` and
 * again by the plugin (or the agent) for the same call.
 */
export function memoizedFs(base: ConfigFs): ConfigFs {
  const texts = new Map<string, string>();
  const present = new Map<string, boolean>();
  return {
    exists(path) {
      if (texts.has(path)) return true;
      let exists = present.get(path);
      if (exists === undefined) {
        exists = base.exists(path);
        present.set(path, exists);
      }
      return exists;
    },
    readText(path) {
      const text = texts.get(path) ?? base.readText(path);
      texts.set(path, text);
      return text;
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The binary's first question, before anything else is loaded: does this call go to the
 * node-local agent? `agent_socket` / `agent_required` from the inline `ipam` block, else from the
 * flat file (inline wins, as for every key). Anything unreadable → undefined: the direct path then
 * loads the config properly and reports what is wrong with it.
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
  return { socket, required: required === true };
}
