import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentStats } from "@ipamkit/agent/client";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, runPlugin } from "../test/run-plugin.js";

// Issue 35, "fail safe agent": a hung agent (SIGSTOP) must not keep the runtime past its budget,
// and must not perform later the calls whose callers were told they failed; idle connections are
// closed; SIGTERM drains and exits within seconds. Real agent processes, real signals.

let dir: string;
let agent: AgentProcess | undefined;
let etcd: EtcdInstance | undefined;
const stopped = new Set<number>();
const signal = (pid: number | undefined, name: "SIGSTOP" | "SIGCONT") => {
  if (pid === undefined) throw new Error("no such process");
  process.kill(pid, name);
  if (name === "SIGSTOP") stopped.add(pid);
  else stopped.delete(pid);
};
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-failsafe-"));
  useNode(dir);
});
afterEach(async () => {
  for (const pid of stopped) process.kill(pid, "SIGCONT");
  stopped.clear();
  await agent?.stop();
  agent = undefined;
  await etcd?.stop();
  etcd = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "run", "agent.sock");
const netconf = (ipam: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  name: "failsafe-net",
  ipam: onNode({
    type: "ipamkit",
    range: "10.63.0.0/24",
    data_dir: join(dir, "store"),
    agent_socket: socketPath(),
    agent_timeout: 2,
    ...ipam,
  }),
});
const held = async () => {
  const store = createFileStore({ dir: join(dir, "store") });
  const pool = await store.readPool({ network: "", cidr: "10.63.0.0/24" });
  await store.close();
  return (pool?.pool.reservations() ?? []).map((r) => r.key.containerId);
};
const until = async (what: string, ok: () => Promise<boolean> | boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("a hung agent (SIGSTOP)", () => {
  it("the caller gets code 11 within agent_timeout, and the agent, resumed, does not perform the call", async () => {
    agent = await startAgentProcess(socketPath());
    expect((await runPlugin(cniEnv("ADD", "h0"), netconf())).json).toMatchObject({ ips: [{ address: "10.63.0.1/24" }] });
    signal(agent.child.pid, "SIGSTOP");
    for (const id of ["h1", "h2"]) {
      const started = Date.now();
      const r = await runPlugin(cniEnv("ADD", id), netconf());
      const took = Date.now() - started;
      // the budget is the configured 2 s, once: only the binary routes (before: 60 s in it, then 60 s more in the Node forwarder)
      expect(took).toBeGreaterThanOrEqual(1_900);
      expect(took).toBeLessThan(4_500);
      expect(r.code).toBe(1);
      expect(r.json).toMatchObject({ cniVersion: "1.0.0", code: 11 });
      expect(r.json?.msg).toContain(`ipamkit agent at ${socketPath()}: timed out after 2 s (agent_timeout)`);
    }
    signal(agent.child.pid, "SIGCONT");
    // the queued calls arrive now, past their deadlines: refused, not performed
    await until("the agent read both calls", async () => (await agentStats(socketPath())).expired === 2);
    expect(await held()).toEqual(["h0"]);
    expect(agent.log()).toMatch(/call past its deadline: not performed/);
    // and it serves again
    expect((await runPlugin(cniEnv("ADD", "h3"), netconf())).json).toMatchObject({ ips: [{ address: "10.63.0.2/24" }] });
  });

  it("an ADD that finishes past its deadline (its store stopped mid-call) is undone", async () => {
    etcd = await startEtcd();
    agent = await startAgentProcess(socketPath());
    const conf = netconf({ data_dir: undefined, datastore: "etcd", etcd_host: etcd.endpoint.replace("http://", "") });
    expect((await runPlugin(cniEnv("ADD", "u0"), conf)).json).toMatchObject({ ips: [{ address: "10.63.0.1/24" }] });
    signal(etcd.pid, "SIGSTOP");
    const r = await runPlugin(cniEnv("ADD", "u1"), conf);
    expect(r.json).toMatchObject({ code: 11, msg: expect.stringContaining("timed out after 2 s") });
    signal(etcd.pid, "SIGCONT");
    await until("the agent undid the late ADD", async () => (await agentStats(socketPath())).undone === 1, 20_000);
    // u1's address is free again: the next ADD gets it, and u1 holds nothing (its DEL finds nothing)
    expect((await runPlugin(cniEnv("ADD", "u2"), conf)).json).toMatchObject({ ips: [{ address: "10.63.0.2/24" }] });
    expect((await runPlugin(cniEnv("CHECK", "u1"), { ...conf, prevResult: { cniVersion: "1.0.0", ips: [] } })).code).toBe(1);
  });
});

describe("connections and shutdown", () => {
  const idleClient = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(socketPath(), () => resolve(socket));
      socket.once("error", reject);
    });
  const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once("close", () => resolve()));

  it("a connection that sends no request is closed after --idle-timeout", async () => {
    agent = await startAgentProcess(socketPath(), { args: ["--idle-timeout", "1"] });
    const client = await idleClient();
    const started = Date.now();
    await closed(client);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await agentStats(socketPath())).toMatchObject({ idleClosed: 1 });
  });

  it("SIGTERM with idle clients connected: exits at once (0)", async () => {
    agent = await startAgentProcess(socketPath());
    const clients = await Promise.all([idleClient(), idleClient(), idleClient()]);
    const hungUp = Promise.all(clients.map(closed));
    const started = Date.now();
    const code = await agent.stop();
    agent = undefined;
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
    await hungUp;
  });

  it("SIGTERM lets a call in flight finish and answer, then exits", async () => {
    etcd = await startEtcd();
    agent = await startAgentProcess(socketPath());
    const conf = netconf({ data_dir: undefined, datastore: "etcd", etcd_host: etcd.endpoint.replace("http://", ""), agent_timeout: 20 });
    expect((await runPlugin(cniEnv("ADD", "d0"), conf)).code).toBe(0);
    const idle = await idleClient();
    const idleClosed = closed(idle);
    signal(etcd.pid, "SIGSTOP");
    const call = runPlugin(cniEnv("ADD", "d1"), conf);
    await until("the call is in flight", async () => (await agentStats(socketPath())).inFlight === 1);
    const child = agent.child;
    const exit = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    child.kill("SIGTERM");
    await idleClosed;
    await new Promise((r) => setTimeout(r, 500));
    // still draining: the call is not cut off
    expect(child.exitCode).toBeNull();
    signal(etcd.pid, "SIGCONT");
    const answer = await call;
    expect(answer).toMatchObject({ code: 0, json: { ips: [{ address: "10.63.0.2/24" }] } });
    const started = Date.now();
    expect(await exit).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
    agent = undefined;
  });
});
