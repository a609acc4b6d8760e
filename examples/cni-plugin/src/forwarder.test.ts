import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentStats } from "@ipamkit/agent/client";
import { agentSettings, hostConfigFs, NODE_CONFIGURATION_PATH_ENV } from "@ipamkit/cni";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";
import { cniEnv, PLUGIN_NODE, type PluginRun, runPlugin } from "../test/run-plugin.js";

// dist/ipamkit (src/forwarder.c) decides, once, whether the agent answers a call — by the rules of
// agentSettings() in @ipamkit/cni — and an answer through the agent is the one direct mode
// (dist/ipamkit-node, which never routes) gives: a runtime must not be able to tell them apart.
// The agent's socket and the other node-level keys come from the node's flat file (`node` below,
// named by IPAMKIT_CONFIGURATION_PATH as the runtime's environment would), never from the config.

let dir: string;
let agent: AgentProcess | undefined;
/** The node's environment: its flat file names the agent's socket. */
let node: Record<string, string>;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-native-"));
  node = nodeFlatFile(dir, { agent_socket: socketPath() });
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "agent.sock");
const netconf = (ipam: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  name: "native-net",
  ...extra,
  ipam: { type: "ipamkit", range: "10.61.0.0/20", data_dir: join(dir, "store"), ...ipam },
});
/** The CNI environment of a call on this node. */
const env = (command: string, id: string, ifName = "net1", extra: Record<string, string> = {}) =>
  cniEnv(command, id, ifName, { ...node, ...extra });
const same = (a: PluginRun, b: PluginRun) =>
  expect({ code: a.code, stdout: a.stdout, stderr: a.stderr }).toEqual({ code: b.code, stdout: b.stdout, stderr: b.stderr });

describe("the native forwarder with an agent", () => {
  beforeEach(async () => {
    agent = await startAgentProcess(socketPath(), { env: node });
  });

  it("relays the agent's answers byte for byte — results, errors, exit codes — the same as direct mode's", async () => {
    const add = await runPlugin(env("ADD", "n1"), netconf());
    expect(add).toMatchObject({ code: 0, stderr: "", json: { cniVersion: "1.0.0", ips: [{ address: "10.61.0.1/20" }] } });
    same(add, await runPlugin(env("ADD", "n1"), netconf(), PLUGIN_NODE));
    // an error whose message carries multi-byte characters (the frame counts bytes)
    const bad = netconf({ range: "10.61.0.0/33" }, { name: "nét-ü" });
    const error = await runPlugin(env("ADD", "n2"), bad);
    expect(error.code).toBe(1);
    expect(error.json).toMatchObject({ code: 7, msg: expect.stringContaining("nét-ü") });
    same(error, await runPlugin(env("ADD", "n2"), bad, PLUGIN_NODE));
    const del = await runPlugin(env("DEL", "n1"), netconf());
    expect(del).toMatchObject({ code: 0, stdout: "", stderr: "" });
    // the 3 native calls answered by the agent in the raw frame; dist/ipamkit-node ran its 2 itself
    expect(await agentStats(socketPath())).toMatchObject({ requests: 3, raw: 3 });
  });

  it("carries any bytes of stdin and the CNI_* environment: the agent answers as direct mode does (property, 25 runs)", async () => {
    // what JSON must escape, multi-byte characters, and anything else; environment values cannot hold NUL
    const special = ['"', "\\", "é", "€", "😀", "\u2028", ...Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1))];
    const text = fc
      .oneof(fc.string({ unit: fc.constantFrom(...special), maxLength: 24 }), fc.string({ unit: "binary", maxLength: 24 }))
      .map((s) => s.replaceAll("\0", ""));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(text, text, text, async (name, ifName, args) => {
        run++;
        // the name and interface land in error messages; the args are CNI_ARGS, parsed by the plugin
        const conf = JSON.stringify(netconf({}, { name }));
        const call = env("ADD", `p${run}`, ifName === "" ? "net1" : ifName, { CNI_ARGS: `IgnoreUnknown=1;X=${args}` });
        const [native, direct] = await Promise.all([runPlugin(call, conf), runPlugin(call, conf, PLUGIN_NODE)]);
        same(native, direct);
      }),
      { numRuns: 25 },
    );
    // and invalid UTF-8 spliced into stdin decodes the same way on both paths
    const bytes = Buffer.concat([
      Buffer.from('{"cniVersion":"1.0.0","name":"x'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from(`",${JSON.stringify({ ipam: netconf().ipam }).slice(1)}`),
    ]);
    const [native, direct] = await Promise.all([runPlugin(env("ADD", "u1"), bytes), runPlugin(env("ADD", "u1"), bytes, PLUGIN_NODE)]);
    expect(native.json).toMatchObject({ code: 7 });
    same(native, direct);
    // every native request was a well-formed raw request: none refused, none decoded as malformed
    expect(await agentStats(socketPath())).toMatchObject({ requests: run + 1, raw: run + 1, malformed: 0 });
  });

  it("sends a 300 KB config (larger than a pipe holds) to the agent, and to direct mode when the agent is gone", async () => {
    const big = netconf({}, { padding: "x".repeat(300_000) });
    const viaAgent = await runPlugin(env("ADD", "big1"), big);
    expect(viaAgent).toMatchObject({ code: 0, stderr: "", json: { ips: [{ address: "10.61.0.1/20" }] } });
    expect((await agentStats(socketPath())).raw).toBe(1);
    await agent?.stop();
    agent = undefined;
    const direct = await runPlugin(env("ADD", "big2"), big);
    expect(direct.stderr).toMatch(/ENOENT; running the call directly/);
    expect(direct.json).toMatchObject({ ips: [{ address: "10.61.0.2/20" }] });
  });

  it("reads the node-level keys from the node's flat file only, never from the network config", async () => {
    // the agent listens, but this node's flat file names no socket: a config naming it is not routed
    // there (until issue 47, any NetworkAttachmentDefinition chose the socket root's binary talks to)
    nodeFlatFile(dir, {});
    const conf = netconf({ agent_socket: socketPath(), agent_required: true, agent_uid: 65534 });
    const r = await runPlugin(env("ADD", "m1"), conf);
    expect(r).toMatchObject({ code: 0, json: { ips: [{ address: "10.61.0.1/20" }] } });
    expect(await agentStats(socketPath())).toMatchObject({ requests: 0, raw: 0 });
    // one warning per key, naming it (direct mode's loader)
    expect(r.stderr.split("\n").filter((line) => line.includes("is a node-level setting and is ignored"))).toEqual([
      expect.stringContaining("ipam.agent_socket "),
      expect.stringContaining("ipam.agent_required "),
      expect.stringContaining("ipam.agent_uid "),
    ]);
    // outside the ipam block: not an agent call either
    expect((await runPlugin(env("ADD", "m1b"), netconf({}, { metadata: { agent_socket: socketPath() } }))).code).toBe(0);
    expect(await agentStats(socketPath())).toMatchObject({ requests: 0 });
    // in the flat file (with escapes, and a second key of the same name: the last one wins, as in JSON.parse)
    const flat = { agent_socket: "/nonexistent/first.sock", data_dir: "/nonexistent", agent_timeout: 5 };
    writeFileSync(
      join(dir, "whereabouts.conf"),
      `${JSON.stringify(flat).slice(0, -1)},"agent\u005fsocket":${JSON.stringify(socketPath())}}`,
    );
    const viaFlat = await runPlugin(env("ADD", "m2"), netconf());
    expect(viaFlat, viaFlat.stdout).toMatchObject({ code: 0, stderr: "", json: { ips: [{ address: "10.61.0.3/20" }] } });
    same(viaFlat, await runPlugin(env("ADD", "m2"), netconf(), PLUGIN_NODE));
    expect(await agentStats(socketPath())).toMatchObject({ requests: 1, raw: 1 });
  });
});

describe("the native forwarder without an agent", () => {
  it("answers VERSION, a config without agent_socket, an agent that is down or required", async () => {
    const version = await runPlugin({ CNI_COMMAND: "VERSION" }, { cniVersion: "1.1.0" });
    expect(version.json).toMatchObject({ supportedVersions: expect.arrayContaining(["1.1.0"]) });
    same(version, await runPlugin({ CNI_COMMAND: "VERSION" }, { cniVersion: "1.1.0" }, PLUGIN_NODE));

    const plain = await runPlugin(cniEnv("ADD", "v1", "net1", nodeFlatFile(dir, {})), netconf());
    expect(plain).toMatchObject({ code: 0, stderr: "", json: { ips: [{ address: "10.61.0.1/20" }] } });

    const down = await runPlugin(cniEnv("ADD", "v2", "net1", nodeFlatFile(dir, { agent_socket: socketPath() })), netconf());
    expect(down.stderr).toMatch(/ENOENT; running the call directly/);
    expect(down.json).toMatchObject({ ips: [{ address: "10.61.0.2/20" }] });

    nodeFlatFile(dir, { agent_socket: socketPath(), agent_required: true });
    const required = await runPlugin(env("ADD", "v3"), netconf());
    expect(required.code).toBe(1);
    expect(required.json).toMatchObject({
      cniVersion: "1.0.0",
      code: 11,
      msg: `ipamkit agent at ${socketPath()}: ENOENT: the ipamkit agent (DaemonSet) is not running on this node (agent_required)`,
    });
  });

  // a long bound: 60 processes on a loaded machine; a timed-out property would go on writing into the next test's directory
  it("routes as agentSettings() says for any mix of inline and node flat-file agent_* keys (property, 30 runs)", {
    timeout: 900_000,
  }, async () => {
    const value = <T>(...values: T[]) => fc.constantFrom(...values);
    const keys = fc.record(
      {
        agent_socket: value<unknown>("", socketPath(), "relative.sock", null, 5),
        agent_required: value<unknown>(true, false, "true", 1, null),
        agent_timeout: value<unknown>(1, 0, -1, 31, "5", 2.5),
        agent_uid: value<unknown>(0, 65534, -1, 1.5, "0"),
      },
      { requiredKeys: [] },
    );
    // the node's configuration path (IPAMKIT_CONFIGURATION_PATH), and one a network config names (never followed)
    const where = value(dir, `${dir}/`, join(dir, "whereabouts.conf"), join(dir, "absent"), "");
    const nadPath = value(undefined, dir, "/nonexistent");
    let run = 0;
    await fc.assert(
      fc.asyncProperty(keys, keys, where, nadPath, async (inline, flat, nodePath, configurationPath) => {
        run++;
        writeFileSync(join(dir, "whereabouts.conf"), JSON.stringify(flat));
        const conf = JSON.stringify(netconf({ configuration_path: configurationPath, ...inline }));
        const call = cniEnv("ADD", `r${run}`, "net1", { [NODE_CONFIGURATION_PATH_ENV]: nodePath });
        const [native, direct] = await Promise.all([runPlugin(call, conf), runPlugin(call, conf, PLUGIN_NODE)]);
        const route = agentSettings(conf, hostConfigFs({ env: call, euid: process.geteuid?.() ?? 0 }));
        if (route === undefined) {
          same(native, direct);
          return;
        }
        // the agent's call (no agent listens here): code 11 when required, else direct mode, said on stderr
        expect(route.socket).toBe(socketPath());
        if (route.required) {
          expect({ code: native.code, json: native.json }).toMatchObject({
            code: 1,
            json: { code: 11, msg: expect.stringContaining("(agent_required)") },
          });
        } else {
          const note = `ipamkit: ipamkit agent at ${socketPath()}: ENOENT; running the call directly\n`;
          expect({ code: native.code, stdout: native.stdout, stderr: native.stderr }).toEqual({
            code: direct.code,
            stdout: direct.stdout,
            stderr: note + direct.stderr,
          });
        }
      }),
      { numRuns: 30 },
    );
  });

  describe("when the agent may have received the call but gave no usable answer: code 11, never run again directly", () => {
    let server: Server | undefined;
    afterEach(async () => {
      await new Promise((r) => (server === undefined ? r(undefined) : server.close(r)));
      server = undefined;
    });
    const answering = async (reply: (request: string) => string) => {
      const requests: string[] = [];
      server = createServer({ allowHalfOpen: true }, (socket) => {
        let text = "";
        socket.on("data", (d) => (text += d));
        socket.on("end", () => {
          requests.push(text);
          socket.end(reply(text));
        });
      });
      await new Promise<void>((r) => server?.listen(socketPath(), r));
      return requests;
    };

    for (const [what, reply] of [
      ["a truncated raw answer", () => "raw 0 999 0\n{}"],
      ["a header with extra fields", () => "raw 0 2 0 9\n{}"],
      ["an exit code out of range", () => "raw 300 2 0\n{}"],
      ["a signed length", () => "raw 0 +2 0\n{}"],
      // what the agent answered before 2026-12-07 when it routed a call again: now no answer of this protocol
      ["`fallback`", () => "fallback\n"],
      ["nothing", () => ""],
    ] as const) {
      it(what, async () => {
        const requests = await answering(reply);
        const r = await runPlugin(env("ADD", "g1"), netconf());
        expect(requests).toHaveLength(1);
        expect(JSON.parse(requests[0] ?? "")).toMatchObject({ v: 1, frame: "raw", socket: socketPath(), env: { CNI_COMMAND: "ADD" } });
        expect(JSON.parse(requests[0] ?? "").deadline).toBeGreaterThan(Date.now());
        // before issue 47 the call then ran in direct mode: an ADD the agent had performed would run twice
        expect(r).toMatchObject({ code: 1, stderr: "" });
        expect(r.json).toMatchObject({
          code: 11,
          msg: expect.stringContaining("the agent may have received the call, so it is not run again"),
        });
        // nothing was allocated by this call: the next direct call gets the first address
        await new Promise((done) => server?.close(done));
        server = undefined;
        const direct = await runPlugin(env("ADD", "g2"), netconf());
        expect(direct.json).toMatchObject({ ips: [{ address: "10.61.0.1/20" }] });
      });
    }
  });
});
