import type { Range } from "@ipamkit/core";
import { loadIpamConfigAndRanges } from "./config.js";
import type { CniCommand, ConfigFs, IpamConfig } from "./types.js";

type ConfigCommand = Exclude<CniCommand, "VERSION">;

/** A call's validated config and its parsed ranges: everything dispatch derives from stdin and the flat file. */
export interface PreparedConfig {
  readonly config: IpamConfig;
  readonly ranges: readonly Range[];
}

/** Parses and validates a call's config (loadIpamConfig, block sizes included), with the ranges parsed on the way. */
export function prepareConfig(stdin: string, options: { fs: ConfigFs; command: ConfigCommand }): PreparedConfig {
  return loadIpamConfigAndRanges(stdin, options);
}

export interface ConfigCacheOptions {
  /** Entries kept, least recently used forgotten first (default 64). */
  limit?: number;
  /** Configs longer than this are prepared every time and not kept (default 64 KiB). */
  maxStdinLength?: number;
}

export interface ConfigCache {
  /** prepareConfig, answered from memory when the same stdin met the same file-system answers before. */
  prepare(stdin: string, options: { fs: ConfigFs; command: ConfigCommand }): PreparedConfig;
  readonly hits: number;
  readonly misses: number;
}

/** One file-system question the loader asked, with the answer it got. */
type Observation = { path: string; exists: boolean } | { path: string; text: string } | { path: string; untrusted: string | undefined };

interface Entry {
  prepared: PreparedConfig;
  observed: readonly Observation[];
}

/**
 * For a long-lived process answering many calls (the node-local agent): a config is a pure function
 * of stdin, the command and what the file system answered (the flat file's presence and text), so a
 * kept result is reused only when the same stdin is asked again and every file-system question the
 * loader asked gets the same answer again: an edited, added or removed flat file takes effect on the
 * next call, as without the cache. Only valid configs without a prevResult are kept (a DEL's or
 * CHECK's stdin carries its attachment's result: seen once); they are frozen, shared by the calls.
 */
export function createConfigCache(options: ConfigCacheOptions = {}): ConfigCache {
  const limit = options.limit ?? 64;
  const maxStdinLength = options.maxStdinLength ?? 64 * 1024;
  const entries = new Map<string, Entry>();
  let hits = 0;
  let misses = 0;
  return {
    prepare(stdin, { fs, command }) {
      if (stdin.length > maxStdinLength) return prepareConfig(stdin, { fs, command });
      const key = `${command}\n${stdin}`;
      const entry = entries.get(key);
      if (entry !== undefined && sameAnswers(entry.observed, fs)) {
        hits++;
        entries.delete(key);
        entries.set(key, entry);
        return entry.prepared;
      }
      misses++;
      const observed: Observation[] = [];
      const prepared = deepFreeze(prepareConfig(stdin, { fs: observing(fs, observed), command }));
      // a runtime's DEL and CHECK carry the attachment's prevResult: a stdin seen once, not worth a place
      if (prepared.config.prevResult !== undefined) return prepared;
      entries.delete(key);
      entries.set(key, { prepared, observed });
      if (entries.size > limit) entries.delete(entries.keys().next().value as string);
      return prepared;
    },
    get hits() {
      return hits;
    },
    get misses() {
      return misses;
    },
  };
}

function observing(fs: ConfigFs, observed: Observation[]): ConfigFs {
  const untrusted = fs.untrusted?.bind(fs);
  return {
    ...(fs.configurationPath === undefined ? {} : { configurationPath: fs.configurationPath }),
    ...(untrusted === undefined
      ? {}
      : {
          untrusted(path: string) {
            const reason = untrusted(path);
            observed.push({ path, untrusted: reason });
            return reason;
          },
        }),
    exists(path) {
      const exists = fs.exists(path);
      observed.push({ path, exists });
      return exists;
    },
    readText(path) {
      const text = fs.readText(path);
      observed.push({ path, text });
      return text;
    },
  };
}

function sameAnswers(observed: readonly Observation[], fs: ConfigFs): boolean {
  try {
    return observed.every((o) =>
      "exists" in o
        ? fs.exists(o.path) === o.exists
        : "text" in o
          ? fs.readText(o.path) === o.text
          : fs.untrusted?.(o.path) === o.untrusted,
    );
  } catch {
    // an unreadable file now: the full load reports it
    return false;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
