import { describe, expect, it } from "vitest";
import { agentSettings, jsonNesting, ROUTE_JSON_MAX_NESTING } from "./agent-settings.js";
import { loadIpamConfig } from "./config.js";
import type { ConfigFs } from "./types.js";

const NODE = "/node/whereabouts.conf";
const files = (entries: Record<string, string>, more: Partial<ConfigFs> = {}): ConfigFs => ({
  exists: (p) => p in entries,
  readText: (p) => entries[p] ?? "",
  configurationPath: NODE,
  ...more,
});
const node = (flat: Record<string, unknown>) => files({ [NODE]: JSON.stringify(flat) });
const conf = (ipam: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: "1.1.0", name: "n", ipam: { type: "ipamkit", range: "10.0.0.0/24", ...ipam } });

describe("agentSettings", () => {
  it("reads the socket, agent_required and agent_uid from the node's flat file only", () => {
    expect(agentSettings(conf({}), node({ agent_socket: "/run/a.sock", agent_required: true, agent_uid: 7 }))).toEqual({
      socket: "/run/a.sock",
      required: true,
      uid: 7,
    });
    // a network config naming them is not routed by them (issue 47)
    expect(agentSettings(conf({ agent_socket: "/run/evil.sock", agent_required: true, agent_uid: 65534 }), node({}))).toBeUndefined();
    expect(agentSettings(conf({ agent_socket: "/run/evil.sock", agent_uid: 65534 }), node({ agent_socket: "/run/a.sock" }))).toEqual({
      socket: "/run/a.sock",
      required: false,
    });
  });

  it("finds the node's flat file by the node's configuration path, never by the config's", () => {
    const fs = files({ "/evil/whereabouts.conf": JSON.stringify({ agent_socket: "/run/evil.sock" }) });
    expect(agentSettings(conf({ configuration_path: "/evil" }), fs)).toBeUndefined();
    const defaults = files(
      { "/etc/cni/net.d/whereabouts.d/whereabouts.conf": JSON.stringify({ agent_socket: "/run/d.sock" }) },
      { configurationPath: "" },
    );
    expect(agentSettings(conf({}), defaults)?.socket).toBe("/run/d.sock");
  });

  it("agent_timeout: inline, else the flat file's", () => {
    expect(agentSettings(conf({ agent_timeout: 3 }), node({ agent_socket: "/a", agent_timeout: 5 }))?.timeoutSeconds).toBe(3);
    expect(agentSettings(conf({ agent_timeout: "" }), node({ agent_socket: "/a", agent_timeout: 5 }))?.timeoutSeconds).toBe(5);
    expect(agentSettings(conf({ agent_timeout: 31 }), node({ agent_socket: "/a", agent_timeout: 5 }))?.timeoutSeconds).toBeUndefined();
  });

  it("anything unreadable, untrusted or out of bounds means direct mode (which then reports it)", () => {
    expect(agentSettings("{nope", node({ agent_socket: "/a" }))).toBeUndefined();
    expect(agentSettings(conf({}), files({}))).toBeUndefined();
    expect(agentSettings(conf({}), node({ agent_socket: "relative.sock" }))).toBeUndefined();
    expect(agentSettings(conf({}), node({ agent_socket: "/a\0b" }))).toBeUndefined();
    expect(agentSettings(conf({}), node({ agent_socket: `/${"é".repeat(2048)}` }))).toBeUndefined();
    expect(agentSettings(conf({}), files({ [NODE]: "{broken" }))).toBeUndefined();
    const untrusted = files({ [NODE]: JSON.stringify({ agent_socket: "/a" }) }, { untrusted: () => "group or others may write it" });
    expect(agentSettings(conf({}), untrusted)).toBeUndefined();
    const deep = `{"ipam":{},"d":${"[".repeat(ROUTE_JSON_MAX_NESTING)}${"]".repeat(ROUTE_JSON_MAX_NESTING)}}`;
    expect(agentSettings(deep, node({ agent_socket: "/a" }))).toBeUndefined();
    expect(jsonNesting('{"a":"[[{","b":[{}]}')).toBe(3);
  });

  it("the config loader takes the agent keys from the node's flat file, and refuses agent_required without a socket", () => {
    expect(loadIpamConfig(conf({}), { fs: node({ agent_socket: "/run/a.sock", agent_required: true }), command: "ADD" }).agent).toEqual({
      socket: "/run/a.sock",
      required: true,
    });
    expect(() => loadIpamConfig(conf({}), { fs: node({ agent_required: true }), command: "ADD" })).toThrow(
      /agent_required.*needs ipam.agent_socket/,
    );
    expect(() => loadIpamConfig(conf({}), { fs: node({ agent_socket: "a.sock" }), command: "ADD" })).toThrow(/agent_socket/);
  });
});
