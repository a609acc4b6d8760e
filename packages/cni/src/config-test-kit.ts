import { expect } from "vitest";
import { ConfigError, loadIpamConfig } from "./config.js";
import type { ConfigFs, IpamConfig } from "./types.js";

// Shared by the config loader's tests (config.test.ts, config-rejections.test.ts, config-sources.test.ts).

export const K8S_FLAT = "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf";
export const CNI_FLAT = "/etc/cni/net.d/whereabouts.d/whereabouts.conf";
export const HOST_FLAT = "/host/etc/cni/net.d/whereabouts.d/whereabouts.conf";

export type Command = "ADD" | "DEL" | "CHECK" | "GC" | "STATUS";

export function memFs(files: Record<string, string | object> = {}): ConfigFs {
  const map = new Map(Object.entries(files).map(([path, body]) => [path, typeof body === "string" ? body : JSON.stringify(body)]));
  return {
    exists: (path) => map.has(path),
    readText: (path) => {
      const text = map.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  };
}

/** A node whose flat file (at the second default location) holds `flat`: where node-level keys (store credentials, agent) live. */
export function onNode(flat: Record<string, unknown>): ConfigFs {
  return memFs({ [CNI_FLAT]: flat });
}

export function netConf(ipam: Record<string, unknown>, top: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: "net1",
    type: "macvlan",
    master: "eth0",
    ipam: { type: "whereabouts", ...ipam },
    ...top,
  });
}

export function load(stdin: string, options: { fs?: ConfigFs; command?: Command } = {}): IpamConfig {
  return loadIpamConfig(stdin, { fs: options.fs ?? memFs(), command: options.command ?? "ADD" });
}

/** Asserts a ConfigError with the code and key, whose message names the key and every fragment. */
export function expectConfigError(run: () => unknown, code: 1 | 2 | 6 | 7, key: string, ...fragments: string[]): ConfigError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  const error = caught as ConfigError;
  expect({ code: error.cniCode, key: error.key }).toEqual({ code, key });
  expect(error.message).toContain(key);
  for (const fragment of fragments) expect(error.message).toContain(fragment);
  return error;
}

export const V4 = { range: "10.0.0.0/24" };
