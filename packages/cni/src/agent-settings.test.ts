import { describe, expect, it } from "vitest";
import { agentSettings } from "./agent-settings.js";
import { loadIpamConfig } from "./config.js";

const files = (entries: Record<string, string>) => ({ exists: (p: string) => p in entries, readText: (p: string) => entries[p] ?? "" });
const conf = (ipam: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: "1.1.0", name: "n", ipam: { type: "ipamkit", range: "10.0.0.0/24", configuration_path: "/flat", ...ipam } });

describe("agentSettings", () => {
  it("reads the inline keys, else the flat file's; inline wins", () => {
    expect(agentSettings(conf({ agent_socket: "/run/a.sock", agent_required: true }), files({}))).toEqual({
      socket: "/run/a.sock",
      required: true,
    });
    const flat = files({ "/flat/whereabouts.conf": JSON.stringify({ agent_socket: "/run/flat.sock" }) });
    expect(agentSettings(conf({}), flat)).toEqual({ socket: "/run/flat.sock", required: false });
    expect(agentSettings(conf({ agent_socket: "/run/inline.sock" }), flat)).toEqual({ socket: "/run/inline.sock", required: false });
  });

  it("anything unreadable means direct mode (which then reports it)", () => {
    expect(agentSettings("{nope", files({}))).toBeUndefined();
    expect(agentSettings(conf({}), files({}))).toBeUndefined();
    expect(agentSettings(conf({ agent_socket: "relative.sock" }), files({}))).toBeUndefined();
    expect(agentSettings(conf({}), files({ "/flat/whereabouts.conf": "{broken" }))).toBeUndefined();
  });

  it("the config loader accepts the keys and refuses agent_required without a socket", () => {
    const fs = files({});
    expect(loadIpamConfig(conf({ agent_socket: "/run/a.sock", agent_required: true }), { fs, command: "ADD" }).agent).toEqual({
      socket: "/run/a.sock",
      required: true,
    });
    expect(() => loadIpamConfig(conf({ agent_required: true }), { fs, command: "ADD" })).toThrow(/agent_required.*needs ipam.agent_socket/);
    expect(() => loadIpamConfig(conf({ agent_socket: "a.sock" }), { fs, command: "ADD" })).toThrow(/agent_socket/);
  });
});
