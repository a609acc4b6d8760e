import { describe, expect, it } from "vitest";
import { ConfigError } from "./config.js";
import { createConfigCache, prepareConfig } from "./config-cache.js";
import type { ConfigFs } from "./types.js";

const FLAT = "/etc/flat/whereabouts.conf";

/** A file system whose files the test edits between calls, counting the questions asked. */
function editableFs() {
  const files = new Map<string, string>();
  const counts = { exists: 0, reads: 0 };
  const fs: ConfigFs = {
    exists: (path) => {
      counts.exists++;
      return files.has(path);
    },
    readText: (path) => {
      counts.reads++;
      const text = files.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
    // the node's flat file (its location is the node's, never the config's)
    configurationPath: "/etc/flat",
  };
  return { fs, files, counts };
}

const conf = (ipam: Record<string, unknown> = {}) =>
  JSON.stringify({ cniVersion: "1.1.0", name: "net1", ipam: { type: "ipamkit", ...ipam } });

describe("createConfigCache", () => {
  it("answers the same stdin from memory: the same frozen config and ranges as a fresh prepare", () => {
    const { fs } = editableFs();
    const cache = createConfigCache();
    const stdin = conf({ range: "10.0.0.0/24", node_block_size: 16 });
    const first = cache.prepare(stdin, { fs, command: "ADD" });
    const second = cache.prepare(stdin, { fs, command: "ADD" });
    expect(second).toBe(first);
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 1, misses: 1 });
    expect(first).toEqual(prepareConfig(stdin, { fs, command: "ADD" }));
    expect(Object.isFrozen(first.config.warnings) && Object.isFrozen(first.ranges[0]?.blocked)).toBe(true);
    expect(() => (first.config.warnings as string[]).push("x")).toThrow(TypeError);
  });

  it("sees a flat file appear, change and go away on the next call", () => {
    const { fs, files } = editableFs();
    const cache = createConfigCache();
    const stdin = conf();
    const networkOf = () => {
      try {
        return cache.prepare(stdin, { fs, command: "ADD" }).config.ranges[0]?.range;
      } catch (error) {
        return (error as ConfigError).key;
      }
    };
    expect(networkOf()).toBe("ipam.range"); // no range anywhere yet
    files.set(FLAT, JSON.stringify({ range: "10.1.0.0/24" }));
    expect(networkOf()).toBe("10.1.0.0/24");
    expect(networkOf()).toBe("10.1.0.0/24");
    files.set(FLAT, JSON.stringify({ range: "10.2.0.0/24" }));
    expect(networkOf()).toBe("10.2.0.0/24");
    files.delete(FLAT);
    expect(networkOf()).toBe("ipam.range");
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 1, misses: 4 });
  });

  it("a hit asks the file system the same questions as a fresh load, no more", () => {
    const { fs, files, counts } = editableFs();
    files.set(FLAT, JSON.stringify({ range: "10.1.0.0/24" }));
    const cache = createConfigCache();
    cache.prepare(conf(), { fs, command: "ADD" });
    const afterMiss = { ...counts };
    cache.prepare(conf(), { fs, command: "ADD" });
    expect({ exists: counts.exists - afterMiss.exists, reads: counts.reads - afterMiss.reads }).toEqual(afterMiss);
  });

  it("a flat file broken or unreadable now gets the full load's error, not the kept config", () => {
    const { fs, files } = editableFs();
    files.set(FLAT, JSON.stringify({ range: "10.1.0.0/24" }));
    const cache = createConfigCache();
    cache.prepare(conf(), { fs, command: "ADD" });
    files.set(FLAT, "{ not json");
    expect(() => cache.prepare(conf(), { fs, command: "ADD" })).toThrow(ConfigError);
    files.set(FLAT, JSON.stringify({ range: "10.1.0.0/24" }));
    cache.prepare(conf(), { fs, command: "ADD" });
    const unreadable: ConfigFs = {
      exists: fs.exists,
      readText: () => {
        throw new Error("EACCES: permission denied");
      },
    };
    expect(() => cache.prepare(conf(), { fs: unreadable, command: "ADD" })).toThrow(ConfigError);
  });

  it("keys by command as well: GC's own requirement is checked, not answered from an ADD", () => {
    const { fs } = editableFs();
    const cache = createConfigCache();
    const stdin = conf({ range: "10.0.0.0/24" });
    cache.prepare(stdin, { fs, command: "ADD" });
    expect(() => cache.prepare(stdin, { fs, command: "GC" })).toThrow(/cni.dev\/valid-attachments/);
  });

  it("keeps out configs that carry a prevResult (a DEL's or CHECK's, one per attachment)", () => {
    const { fs } = editableFs();
    const cache = createConfigCache({ limit: 1 });
    const add = conf({ range: "10.0.0.0/24" });
    cache.prepare(add, { fs, command: "ADD" });
    const prevResult = { cniVersion: "1.1.0", ips: [{ address: "10.0.0.1/24" }] };
    const del = JSON.stringify({ ...JSON.parse(add), prevResult });
    const first = cache.prepare(del, { fs, command: "DEL" });
    expect(first.config.prevResult).toBeDefined();
    expect(cache.prepare(del, { fs, command: "DEL" })).not.toBe(first);
    // the ADD's entry is still there: the DELs took no place
    cache.prepare(add, { fs, command: "ADD" });
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 1, misses: 3 });
  });

  it("keeps invalid configs out: each call reports the error again", () => {
    const { fs } = editableFs();
    const cache = createConfigCache();
    const stdin = conf({ range: "10.0.0.0/33" });
    for (let i = 0; i < 2; i++) expect(() => cache.prepare(stdin, { fs, command: "ADD" })).toThrow(ConfigError);
    expect(cache.hits).toBe(0);
  });

  it("forgets the least recently used entry beyond its limit, and does not keep configs over the length limit", () => {
    const { fs } = editableFs();
    const cache = createConfigCache({ limit: 2, maxStdinLength: 200 });
    const [a, b, c] = ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"].map((range) => conf({ range }));
    for (const stdin of [a, b, a, c, a, b] as string[]) cache.prepare(stdin, { fs, command: "ADD" });
    // a b (miss, miss), a (hit), c (miss: b goes), a (hit), b (miss)
    expect({ hits: cache.hits, misses: cache.misses }).toEqual({ hits: 2, misses: 4 });
    const long = conf({ range: "10.0.3.0/24", routes: Array.from({ length: 20 }, () => ({ dst: "0.0.0.0/0" })) });
    expect(long.length).toBeGreaterThan(200);
    const once = cache.prepare(long, { fs, command: "ADD" });
    expect(cache.prepare(long, { fs, command: "ADD" })).not.toBe(once);
    expect(cache.hits).toBe(2);
  });
});
