import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ERROR_MSG_BYTES, MAX_ERROR_ANSWER_BYTES, NODE_CONFIGURATION_PATH_ENV, SUPPORTED_VERSIONS } from "@ipamkit/cni";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT, type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";
import { cniEnv, PLUGIN, PLUGIN_NODE, runPlugin } from "../test/run-plugin.js";

// Issue 35: a host without Node.js (Talos) runs the static binary alone, and the agent path must
// not trust a socket another user can put in place.

let dir: string;
let agent: AgentProcess | undefined;
let squatter: ChildProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-nonode-"));
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  squatter?.kill("SIGKILL");
  squatter = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const NOBODY = 65534;
/** A PATH with no `node` in it, as on a host without Node.js. */
const NO_NODE = { PATH: "/nonexistent-bin" };
const netconf = () => ({
  cniVersion: "1.0.0",
  name: "nonode-net",
  ipam: { type: "ipamkit", range: "10.62.0.0/24", data_dir: join(dir, "store") },
});
/** The node's flat file with these agent keys (none: direct mode), and its environment. */
const onNode = (keys: Record<string, unknown>) => nodeFlatFile(dir, keys);

/** dist/ipamkit and dist/ipamkit-node (a Node host's bin dir); the binary is what the runtime runs. */
function binDir(): string {
  const bin = join(dir, "bin");
  mkdirSync(bin);
  for (const file of ["ipamkit", "ipamkit-node", "ipamkit-direct.cjs"]) copyFileSync(join(PLUGIN, "..", file), join(bin, file));
  chmodSync(join(bin, "ipamkit"), 0o755);
  chmodSync(join(bin, "ipamkit-node"), 0o755);
  return join(bin, "ipamkit");
}

describe("a host without Node.js", () => {
  it("VERSION and the about text come from the binary itself, with @ipamkit/cni's versions", async () => {
    const binary = binDir();
    const version = await runPlugin({ CNI_COMMAND: "VERSION", ...NO_NODE }, '{"cniVersion":"0.4.0"}', binary);
    expect(version).toMatchObject({ code: 0, stderr: "", json: { cniVersion: "0.4.0", supportedVersions: [...SUPPORTED_VERSIONS] } });
    // an unreadable stdin: the newest version, as direct mode answers
    const plain = await runPlugin({ CNI_COMMAND: "VERSION", ...NO_NODE }, "{nope", binary);
    const node = await runPlugin({ CNI_COMMAND: "VERSION" }, "{nope", PLUGIN_NODE);
    expect(plain).toMatchObject({ code: 0, stdout: node.stdout, json: { cniVersion: SUPPORTED_VERSIONS.at(-1) } });
    const about = await runPlugin(NO_NODE, "", binary);
    expect(about).toMatchObject({ code: 0, stdout: "", stderr: (await runPlugin({}, "", PLUGIN_NODE)).stderr });
  });

  it("an agent that is not running is a CNI error naming the socket (code 11), never exit 127", async () => {
    const binary = binDir();
    const socket = join(dir, "run", "agent.sock");
    const down = await runPlugin(cniEnv("ADD", "n1", "net1", { ...NO_NODE, ...onNode({ agent_socket: socket }) }), netconf(), binary);
    expect(down.code).toBe(1);
    expect(down.json).toMatchObject({ cniVersion: "1.0.0", code: 11 });
    expect(down.json?.msg).toContain(socket);
    expect(down.json?.msg).toMatch(/ipamkit agent \(DaemonSet\) is not running on this node/);
    // the same with agent_required, with or without Node
    const requiredNode = onNode({ agent_socket: socket, agent_required: true });
    const required = await runPlugin(cniEnv("DEL", "n1", "net1", { ...NO_NODE, ...requiredNode }), netconf(), binary);
    expect(required.json).toMatchObject({ code: 11, msg: expect.stringContaining("(agent_required)") });
  });

  it("direct mode (no agent_socket) without Node is a CNI error saying so (code 50)", async () => {
    const r = await runPlugin(cniEnv("ADD", "n2", "net1", { ...NO_NODE, ...onNode({}) }), netconf(), binDir());
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({
      code: 50,
      msg: expect.stringMatching(/direct mode needs Node\.js.*"node" is not in PATH \(\/nonexistent-bin\)/),
    });
    expect(r.stdout + r.stderr).not.toMatch(/env:|No such file/);
  });

  it("the binary's own error answers are bounded as errorJson bounds them (msg ≤ ERROR_MSG_BYTES, ≤ 4 KiB)", async () => {
    // a search path of 20 000 bytes, control characters included (each escaped to 6 bytes in JSON)
    const path = `/nonexistent-bin:${"\u0001/x".repeat(2_000)}${"/y".repeat(4_000)}`;
    const r = await runPlugin(cniEnv("ADD", "n4", "net1", { PATH: path, ...onNode({}) }), netconf(), binDir());
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ cniVersion: "1.0.0", code: 50 });
    const msg = String(r.json?.msg);
    expect(msg.startsWith("this call needs direct mode")).toBe(true);
    expect(msg).toContain('"node" is not in PATH (/nonexistent-bin:\u0001/x');
    expect(msg.endsWith("…")).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(msg)) - 2).toBeLessThanOrEqual(ERROR_MSG_BYTES);
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
  });

  it("with the agent running, ADD and DEL need nothing but the binary", async () => {
    const socket = join(dir, "run", "agent.sock");
    const node = onNode({ agent_socket: socket });
    agent = await startAgentProcess(socket, { env: node });
    const binary = binDir();
    const add = await runPlugin(cniEnv("ADD", "n3", "net1", { ...NO_NODE, ...node }), netconf(), binary);
    expect(add).toMatchObject({ code: 0, stderr: "", json: { ips: [{ address: "10.62.0.1/24" }] } });
    expect(await runPlugin(cniEnv("DEL", "n3", "net1", { ...NO_NODE, ...node }), netconf(), binary)).toMatchObject({ code: 0, stdout: "" });
  });
});

/** Runs `node -e script args` as uid/gid 65534 (nobody), through util-linux's setpriv. */
function asNobody(script: string, args: string[]): ChildProcess {
  const which = spawnSync("sh", ["-c", "command -v setpriv"]);
  if (which.status !== 0) throw new Error("setpriv is missing: apt-get install util-linux");
  return spawn("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", process.execPath, "-e", script, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
}

describe("socket squatting", () => {
  // a squatter: answers every call with a made-up address, in the native raw frame and in JSON
  const SQUATTER = `
    const out = '{"cniVersion":"1.0.0","ips":[{"address":"10.62.0.99/24"}]}\\n';
    require("node:net").createServer({ allowHalfOpen: true }, (s) => {
      let text = "";
      s.on("error", () => {}); // a refusing client hangs up without reading
      s.on("data", (d) => (text += d));
      s.on("end", () => s.end(text.includes('"frame":"raw"') ? "raw 0 " + out.length + " 0\\n" + out
        : JSON.stringify({ v: 1, exitCode: 0, stdout: out, stderr: "" }) + "\\n"));
    }).listen(process.argv[1], () => console.log("listening"));`;

  it("an answer from a socket served by another uid is refused (peer uid named) by the binary", async () => {
    // the setting: a socket directory another user can write
    chmodSync(dir, 0o755);
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const socket = join(shared, "agent.sock");
    squatter = asNobody(SQUATTER, [socket]);
    await new Promise<void>((resolve, reject) => {
      squatter?.stdout?.once("data", () => resolve());
      squatter?.once("exit", (code) => reject(new Error(`the squatter exited (${code})`)));
    });
    const native = await runPlugin(cniEnv("ADD", "s1", "net1", onNode({ agent_socket: socket })), netconf());
    expect(native.code).toBe(1);
    expect(native.json).toMatchObject({ code: 11 });
    expect(native.json?.msg).toContain(socket);
    expect(native.json?.msg).toContain(`served by uid ${NOBODY}, which is neither root nor agent_uid (unset)`);
    expect(native.stdout).not.toContain("10.62.0.99");
    expect(native.json?.msg).toBe(
      `ipamkit agent at ${socket}: refusing it: the socket is served by uid ${NOBODY}, which is neither root nor agent_uid (unset)`,
    );
    // an agent deliberately run as that uid is allowed by the node's agent_uid
    const allowed = await runPlugin(cniEnv("ADD", "s2", "net1", onNode({ agent_socket: socket, agent_uid: NOBODY })), netconf());
    expect(allowed.json).toMatchObject({ ips: [{ address: "10.62.0.99/24" }] });
    // issue 47: a key with a NUL (`agent_uid\u0000`) is another key, not agent_uid cut short
    writeFileSync(join(dir, "whereabouts.conf"), `{"agent_socket":${JSON.stringify(socket)},"agent_uid\\u0000":${NOBODY}}`);
    const cut = await runPlugin(cniEnv("ADD", "s3", "net1", { [NODE_CONFIGURATION_PATH_ENV]: dir }), netconf());
    expect(cut.json).toMatchObject({ code: 11, msg: expect.stringContaining("neither root nor agent_uid (unset)") });
    expect(cut.stdout).not.toContain("10.62.0.99");
  });

  /** Starts dist/ipamkit-agent and returns its exit code and stderr (it should not start). */
  const refusedStart = (socket: string) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(AGENT, ["--socket", socket], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });

  it("the agent refuses a socket directory that others can write or that is not its own (one line, exit 1)", async () => {
    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const r = await refusedStart(join(open, "agent.sock"));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ipamkit-agent: cannot start: socket directory ${open} is group/other-writable (mode 0777): refusing it (another user could replace the socket); chmod go-w it or use a directory such as /run/ipamkit (0700)\n`,
    );
    const group = join(dir, "group");
    mkdirSync(group);
    chmodSync(group, 0o770);
    expect((await refusedStart(join(group, "agent.sock"))).stderr).toMatch(/is group\/other-writable \(mode 0770\)/);
    const foreign = join(dir, "foreign");
    mkdirSync(foreign, { mode: 0o700 });
    spawnSync("chown", [String(NOBODY), foreign]);
    const f = await refusedStart(join(foreign, "agent.sock"));
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(new RegExp(`socket directory ${foreign} belongs to uid ${NOBODY}, not to this agent's uid 0`));
  });
});
