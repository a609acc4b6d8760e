import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeFlatFile } from "../test/node-files.js";
import { cniEnv, PLUGIN, runPlugin } from "../test/run-plugin.js";

// Issue 47: dist/ipamkit runs as root with a config that anyone allowed to create a
// NetworkAttachmentDefinition wrote. Each case here is a defect of the binary before that issue;
// each test fails on the old code (which opened what a config named, spun, replayed, died of
// SIGPIPE, read stdin without bound and ran ./node).

let dir: string;
let server: Server | undefined;
let listener: ChildProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-hard-"));
  chmodSync(dir, 0o755);
});
afterEach(async () => {
  await new Promise((r) => (server === undefined ? r(undefined) : server.close(r)));
  server = undefined;
  listener?.kill("SIGKILL");
  listener = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "agent.sock");
const netconf = (ipam: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  name: "hard-net",
  ipam: { type: "ipamkit", range: "10.63.0.0/24", data_dir: join(dir, "store"), ...ipam },
});

/** A fake agent that records requests and answers each with a made-up address in the raw frame. */
async function fakeAgent(): Promise<string[]> {
  const requests: string[] = [];
  const out = '{"cniVersion":"1.0.0","ips":[{"address":"10.63.0.99/24"}]}\n';
  server = createServer({ allowHalfOpen: true }, (socket) => {
    let text = "";
    socket.on("error", () => undefined);
    socket.on("data", (d) => (text += d));
    socket.on("end", () => {
      requests.push(text);
      socket.end(`raw 0 ${out.length} 0\n${out}`);
    });
  });
  await new Promise<void>((r) => server?.listen(socketPath(), r));
  return requests;
}

describe("what the binary opens", () => {
  it("never opens a network config's configuration_path: not a FIFO, not a 4 KiB path whose suffix was cut", async () => {
    execFileSync("mkfifo", [join(dir, "fifo"), join(dir, "fifo.conf")]);
    // 4095 bytes not ending in .conf: the old code's snprintf cut "/whereabouts.conf" off, leaving the FIFO's path
    const long = `${dir}${"/".repeat(4095 - dir.length - "/fifo".length)}/fifo`;
    expect(long).toHaveLength(4095);
    const node = nodeFlatFile(dir, {});
    for (const [i, configuration_path] of [long, join(dir, "fifo.conf")].entries()) {
      // the old code blocked in open() of the FIFO for ever (no deadline applies to open)
      const r = await runPlugin(cniEnv("ADD", `f${i}`, "net1", node), netconf({ configuration_path }), PLUGIN, { killAfterMs: 20_000 });
      expect(r.signal ?? null).toBeNull();
      expect(r).toMatchObject({ code: 0, json: { ips: [{ address: `10.63.0.${i + 1}/24` }] } });
      expect(r.stderr).toContain("ipam.configuration_path is a node-level setting and is ignored in a network config");
    }
  });

  it("reads the node's flat file only when it is a regular file of root's that group and others cannot write", async () => {
    const requests = await fakeAgent();
    const node = nodeFlatFile(dir, { agent_socket: socketPath() });
    const flat = join(dir, "whereabouts.conf");
    const call = (id: string, env = node) => runPlugin(cniEnv("ADD", id, "net1", env), netconf(), PLUGIN, { killAfterMs: 20_000 });
    chmodSync(flat, 0o666);
    const open = await call("w1");
    expect(open.json).toMatchObject({ code: 7, msg: expect.stringContaining("group or others may write it (mode 0666)") });
    chmodSync(flat, 0o644);
    spawnSync("chown", ["65534", flat]);
    const foreign = await call("w2");
    expect(foreign.json).toMatchObject({ code: 7, msg: expect.stringContaining("owned by uid 65534") });
    // a FIFO named by the node's own setting: opened without blocking, refused
    execFileSync("mkfifo", [join(dir, "node-fifo.conf")]);
    const fifo = await call("w3", { IPAMKIT_CONFIGURATION_PATH: join(dir, "node-fifo.conf") });
    expect(fifo.json).toMatchObject({ code: 7, msg: expect.stringContaining("not a regular file") });
    // none of them was routed to the socket they name; the same file, root's and 0644, is
    spawnSync("chown", ["0", flat]);
    expect(requests).toHaveLength(0);
    expect((await call("w4")).json).toMatchObject({ ips: [{ address: "10.63.0.99/24" }] });
    expect(requests).toHaveLength(1);
  });
});

describe("what the binary reads", () => {
  it("a backslash before a raw NUL byte is no escape: the config is not JSON, and is not sent to the agent", async () => {
    const requests = await fakeAgent();
    const node = nodeFlatFile(dir, { agent_socket: socketPath() });
    const text = JSON.stringify({ ...netconf(), pad: "PAD" }).replace('"PAD"', '"\\\u0000"');
    const r = await runPlugin(cniEnv("ADD", "n1", "net1", node), Buffer.from(text, "latin1"));
    expect(requests).toHaveLength(0);
    expect(r.json).toMatchObject({ code: 6 });
  });

  it("stdin larger than 16 MiB is refused before anything is built (code 7)", async () => {
    const r = await runPlugin(cniEnv("ADD", "b1", "net1", nodeFlatFile(dir, {})), `${JSON.stringify(netconf())}${" ".repeat(17 << 20)}`);
    expect(r).toMatchObject({ code: 1, json: { code: 7, msg: "the network config on stdin is larger than 16 MiB" } });
  });

  it("stdin not closed within 30 s is refused (code 5), whatever it holds so far", async () => {
    const child = spawn(PLUGIN, [], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...cniEnv("ADD", "t1") }, stdio: "pipe" });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stdin.write(JSON.stringify(netconf()).slice(0, 20));
    const [code, signal] = await new Promise<[number | null, string | null]>((r) => child.on("close", (c, s) => r([c, s])));
    clearTimeout(timer);
    child.stdin.destroy();
    expect({ code, signal }).toEqual({ code: 1, signal: null });
    expect(JSON.parse(stdout)).toMatchObject({ code: 5, msg: "stdin was not closed within 30 s" });
  });
});

describe("how the binary behaves", () => {
  it("a closed stdout is an exit code, not death by SIGPIPE", async () => {
    nodeFlatFile(dir, { agent_socket: socketPath(), agent_required: true });
    const child = spawn(PLUGIN, [], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...cniEnv("ADD", "p1", "net1", { IPAMKIT_CONFIGURATION_PATH: dir }) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdout.destroy();
    child.stdin.end(JSON.stringify(netconf()));
    const [code, signal] = await new Promise<[number | null, string | null]>((r) => child.on("close", (c, s) => r([c, s])));
    expect({ code, signal }).toEqual({ code: 1, signal: null });
  });

  it("finds node only in absolute PATH entries: an empty or relative entry never runs ./node", async () => {
    const work = join(dir, "work");
    mkdirSync(join(work, "bin"), { recursive: true });
    for (const node of [join(work, "node"), join(work, "bin", "node")]) {
      writeFileSync(node, `#!/bin/sh\ntouch ${join(dir, "ran")}\n`);
      chmodSync(node, 0o755);
    }
    for (const path of [":/nonexistent-bin", "/nonexistent-bin::", "bin:/nonexistent-bin"]) {
      const env = cniEnv("ADD", "x1", "net1", { PATH: path, ...nodeFlatFile(dir, {}) });
      const r = await runPlugin(env, netconf(), PLUGIN, { cwd: work });
      expect(r.json, path).toMatchObject({ code: 50, msg: expect.stringContaining('"node" is not in PATH') });
      expect(existsSync(join(dir, "ran")), path).toBe(false);
    }
  });

  it("waits between connects to a listener whose backlog is full: no spin, code 11 at the deadline", async () => {
    // a listener that never accepts (its event loop blocked), backlog 1, filled by two connections
    const script = `const s = require("node:net").createServer(); s.listen({ path: process.argv[1], backlog: 1 }, () => {
      console.log("listening"); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000); });`;
    listener = spawn(process.execPath, ["-e", script, socketPath()], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => listener?.stdout?.once("data", () => resolve()));
    const fillers = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<Socket>((resolve) => {
            const socket = new Socket();
            socket.on("error", () => undefined);
            socket.connect(socketPath(), () => resolve(socket));
            setTimeout(() => resolve(socket), 500);
          }),
      ),
    );
    const node = nodeFlatFile(dir, { agent_socket: socketPath(), agent_required: true });
    // bash's `times`: the CPU time of the finished child, exactly
    const shell = 'printf %s "$CONF" | "$0"; code=$?; times >&2; exit $code';
    const r = spawnSync("bash", ["-c", shell, PLUGIN], {
      env: { ...cniEnv("ADD", "q1", "net1", node), PATH: "/usr/bin:/bin", CONF: JSON.stringify(netconf({ agent_timeout: 3 })) },
      encoding: "utf8",
    });
    for (const socket of fillers) socket.destroy();
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 11, msg: expect.stringContaining("timed out after 3 s") });
    const children = r.stderr.trim().split("\n").at(-1) ?? "";
    const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);
    // the old code: connect+poll pairs for the whole 3 s (~2.7 s of CPU on an idle machine)
    expect(seconds, children).toBeLessThan(0.25);
  });
});
