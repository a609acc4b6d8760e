import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT, type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, PLUGIN, runPlugin } from "../test/run-plugin.js";

let dir: string;
let agent: AgentProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-agent-bin-"));
  useNode(dir);
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "run", "agent.sock");
const netconf = (ipam: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "agent-net",
  // node-level keys (the socket, agent_required, the kubeconfig) land in the node's flat file
  ipam: onNode({ type: "ipamkit", range: "10.60.0.0/22", data_dir: join(dir, "store"), agent_socket: socketPath(), ...ipam }),
});
const held = async () => {
  const store = createFileStore({ dir: join(dir, "store") });
  const pool = await store.readPool({ network: "", cidr: "10.60.0.0/22" });
  await store.close();
  return (pool?.pool.reservations() ?? []).map((r) => r.key.containerId);
};

describe("the binary and the agent", () => {
  it("the forwarding path runs no Node at all: dist/ipamkit alone serves a Kubernetes network through the agent", async () => {
    const { chmodSync, copyFileSync, mkdirSync } = await import("node:fs");
    const { startKubeTestServer } = await import("@ipamkit/kube-test-server");
    const { agentStats } = await import("@ipamkit/agent/client");
    const server = await startKubeTestServer({ port: 0 });
    try {
      const kubeconfig = join(dir, "kubeconfig");
      await server.writeKubeconfig(kubeconfig, { namespace: "fwd" });
      agent = await startAgentProcess(socketPath());
      const bin = join(dir, "bin");
      mkdirSync(bin);
      // no ipamkit-node, no ipamkit-direct.cjs, no ipamkit-kubernetes.cjs, no node_modules beside it
      copyFileSync(PLUGIN, join(bin, "ipamkit"));
      const conf = netconf({ datastore: "kubernetes", kubernetes: { kubeconfig }, agent_required: true, data_dir: undefined });
      const add = await runPlugin(cniEnv("ADD", "f1"), conf, join(bin, "ipamkit"));
      expect(add.stderr).toBe("");
      expect(add.json).toEqual({ cniVersion: "1.1.0", ips: [{ address: "10.60.0.1/22" }] });
      expect(await agentStats(socketPath())).toMatchObject({ requests: 1, raw: 1 });
      // without the agent, that copy has nothing to hand the call to: a clear error, no stack trace
      await agent.stop();
      agent = undefined;
      const kube = netconf({ datastore: "kubernetes", kubernetes: { kubeconfig }, data_dir: undefined });
      const alone = await runPlugin(cniEnv("ADD", "f2"), kube, join(bin, "ipamkit"));
      expect(alone.code).toBe(1);
      expect(alone.json).toMatchObject({ code: 2, msg: expect.stringMatching(/ipamkit-node\) cannot be run beside this binary/) });
      // with the Node forwarder beside it but not the plugin: the Node forwarder's error
      copyFileSync(join(PLUGIN, "..", "ipamkit-node"), join(bin, "ipamkit-node"));
      chmodSync(join(bin, "ipamkit-node"), 0o755);
      const noPlugin = await runPlugin(cniEnv("ADD", "f2"), kube, join(bin, "ipamkit"));
      expect(noPlugin.code).toBe(1);
      expect(noPlugin.json).toMatchObject({ code: 2, msg: expect.stringMatching(/ipamkit-direct\.cjs\) cannot be loaded/) });
      for (const r of [alone, noPlugin]) expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await server.close();
    }
  });

  it("forwards when the agent answers (the agent logs the call)", async () => {
    agent = await startAgentProcess(socketPath());
    const r = await runPlugin(cniEnv("ADD", "a1"), netconf());
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(agent.log()).toMatch(/"msg":"cni call"/);
    expect(await held()).toEqual(["a1"]);
  });

  it("logs its process id once: pino's own field, not a second one beside it", async () => {
    agent = await startAgentProcess(socketPath());
    const listening =
      agent
        .log()
        .split("\n")
        .find((line) => line.includes('"msg":"ipamkit agent listening"')) ?? "";
    expect(JSON.parse(listening)).toMatchObject({ pid: agent.child.pid, socket: socketPath() });
    // JSON.parse keeps the last of two equal keys: count them in the text
    expect(listening.match(/"pid":/g)).toHaveLength(1);
  });

  it("falls back to direct mode when the agent is down, or answers 11 when it is required", async () => {
    const direct = await runPlugin(cniEnv("ADD", "d1"), netconf());
    expect(direct.code).toBe(0);
    expect(direct.stderr).toMatch(/ipamkit agent at .*: ENOENT; running the call directly/);
    const required = await runPlugin(cniEnv("ADD", "d2"), netconf({ agent_required: true }));
    expect(required.code).toBe(1);
    expect(required.json).toMatchObject({ code: 11, msg: expect.stringContaining("agent_required") });
    expect(await held()).toEqual(["d1"]);
  });

  it("a killed agent loses no acknowledged reservation, and a restart replaces its stale socket", async () => {
    agent = await startAgentProcess(socketPath());
    let finished = 0;
    const calls = Array.from({ length: 60 }, (_, i) =>
      runPlugin(cniEnv("ADD", `k${i}`), netconf({ agent_required: true })).finally(() => {
        finished++;
      }),
    );
    // kill it mid-stream: some calls answered, others in flight or not yet connected
    while (finished < 10) await new Promise((r) => setTimeout(r, 5));
    await agent.kill();
    const runs = await Promise.all(calls);
    const acknowledged = runs.flatMap((r, i) => (r.code === 0 ? [`k${i}`] : []));
    const refused = runs.filter((r) => r.code !== 0);
    for (const r of refused) expect(r.json?.code).toBe(11);
    expect(acknowledged.length).toBeGreaterThan(0);
    const stored = await held();
    for (const id of acknowledged) expect(stored).toContain(id);
    expect(statSync(socketPath()).isSocket()).toBe(true);
    agent = await startAgentProcess(socketPath());
    const again = await runPlugin(cniEnv("ADD", "after-restart"), netconf({ agent_required: true }));
    expect(again.code).toBe(0);
    // the refused calls are retried by the runtime: the same ADDs now succeed
    for (const [i, r] of runs.entries())
      if (r.code !== 0) expect((await runPlugin(cniEnv("ADD", `k${i}`), netconf({ agent_required: true }))).code).toBe(0);
    expect((await held()).length).toBe(61);
  }, 120_000);
});

describe("one agent serves one node (the cluster simulation hosts its hollow nodes itself)", () => {
  it("a second --socket or --node-name, a relative socket or no socket is a usage error (exit 2)", async () => {
    const { spawnSync } = await import("node:child_process");
    const usage = (args: string[]) => spawnSync(AGENT, args, { encoding: "utf8", timeout: 10_000 });
    const one = socketPath();
    const two = join(dir, "run", "two.sock");
    const cases: [string[], RegExp][] = [
      [["--socket", one, "--socket", two], /--socket and --node-name are given once: one agent serves one node/],
      [["--socket", one, "--node-name", "n1", "--node-name", "n2"], /--socket and --node-name are given once/],
      [["--socket", "rel.sock"], /--socket must be an absolute path: "rel.sock"/],
      [["--socket", one, "--node-name", "bad/name"], /--node-name: not a node name: "bad\/name"/],
      [["--node-name", "n1"], /--socket is required/],
    ];
    for (const [args, message] of cases) {
      const run = usage(args);
      expect([run.status, run.stdout]).toEqual([2, ""]);
      expect(run.stderr).toMatch(message);
    }
  });
});

describe("--warm: the agent loads store code at start, not on its node's first call", () => {
  const logged = async (pattern: RegExp) => {
    const deadline = Date.now() + 15_000;
    while (!pattern.test(agent?.log() ?? "")) {
      if (Date.now() > deadline) throw new Error(`not logged: ${pattern}\n${agent?.log()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it("loads each named store's code after listening", async () => {
    agent = await startAgentProcess(socketPath(), { args: ["--warm", "etcd,kubernetes"] });
    await logged(/"datastore":"etcd","ms":\d+,"msg":"store code loaded"/);
    await logged(/"datastore":"kubernetes","ms":\d+,"msg":"store code loaded"/);
    expect((await runPlugin(cniEnv("ADD", "w1"), netconf({ agent_required: true }))).code).toBe(0);
  });

  it("a store whose code is not beside the agent is logged and the agent serves on", async () => {
    const { copyFileSync, mkdirSync } = await import("node:fs");
    const bin = join(dir, "bin");
    mkdirSync(bin);
    // the agent alone: no node_modules (etcd3), no ipamkit-kubernetes.cjs beside it
    copyFileSync(AGENT, join(bin, "ipamkit-agent"));
    agent = await startAgentProcess(socketPath(), { binary: join(bin, "ipamkit-agent"), args: ["--warm", "etcd,kubernetes"] });
    await logged(/"datastore":"etcd".*--warm: cannot load the store code: ipam.datastore \\"etcd\\"/);
    await logged(/"datastore":"kubernetes".*--warm: cannot load the store code: ipam.datastore \\"kubernetes\\"/);
    expect((await runPlugin(cniEnv("ADD", "w2"), netconf({ agent_required: true }))).code).toBe(0);
    expect(await held()).toEqual(["w2"]);
  });

  it("a name that is not a datastore is a usage error (exit 2), never ignored", async () => {
    const { spawnSync } = await import("node:child_process");
    const run = spawnSync(AGENT, ["--socket", socketPath(), "--warm", "etcd,etc"], { encoding: "utf8", timeout: 10_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--warm: not a datastore: "etc" \(one of etcd, kubernetes, file\)/);
    expect(run.stdout).toBe("");
  });
});

it("the DaemonSet manifest runs the agent on the socket the README configures, on a host path", async () => {
  const { readFileSync } = await import("node:fs");
  const { loadAllYaml } = await import("@kubernetes/client-node");
  const root = join(import.meta.dirname, "..");
  const [ds] = loadAllYaml(readFileSync(join(root, "deploy", "agent-daemonset.yaml"), "utf8")) as {
    kind: string;
    spec: {
      template: {
        spec: {
          containers: {
            args: string[];
            env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
            volumeMounts: { name: string; mountPath: string }[];
          }[];
          volumes: { name: string; hostPath?: { path: string } }[];
        };
      };
    };
  }[];
  expect(ds?.kind).toBe("DaemonSet");
  const pod = ds?.spec.template.spec;
  const args = pod?.containers[0]?.args ?? [];
  const socket = args[args.indexOf("--socket") + 1] ?? "";
  expect(readFileSync(join(root, "README.md"), "utf8")).toContain(`"agent_socket": "${socket}"`);
  const mount = pod?.containers[0]?.volumeMounts.find((m) => socket.startsWith(`${m.mountPath}/`));
  expect(pod?.volumes.find((v) => v.name === mount?.name)?.hostPath?.path).toBe(join(socket, ".."));
  // The node's blocks are owned by the Kubernetes node name (downward API), not the pod's host name.
  const nodeArg = args[args.indexOf("--node-name") + 1] ?? "";
  const variable = /^\$\((\w+)\)$/.exec(nodeArg)?.[1];
  expect(pod?.containers[0]?.env.find((e) => e.name === variable)?.valueFrom?.fieldRef?.fieldPath).toBe("spec.nodeName");
  // the installer copies every file the binary may hand a call to (readdirSync: what the build makes)
  const { readdirSync } = await import("node:fs");
  const install = readFileSync(join(root, "deploy", "agent-daemonset.yaml"), "utf8").match(/"cp ([^"]+) \/host\/opt\/cni\/bin\/"/)?.[1];
  const built = readdirSync(join(root, "dist")).filter((f) => f.startsWith("ipamkit"));
  expect(
    install
      ?.split(" ")
      .map((f) => f.replace("/app/dist/", ""))
      .filter((f) => f.startsWith("ipamkit"))
      .sort(),
  ).toEqual(built.sort());
});
