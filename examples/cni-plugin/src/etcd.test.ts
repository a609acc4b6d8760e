import { startEtcd } from "@ipamkit/etcd-launcher";
import { expect, it } from "vitest";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, runPlugin } from "../test/run-plugin.js";

// a node without a flat file (none at the defaults is read either)
useNode("/nonexistent-ipamkit");

it("the binary on the etcd store: ADD, repeated ADD, DEL against a real etcd (etcd3 resolvable beside it)", async () => {
  const etcd = await startEtcd();
  try {
    const conf = {
      cniVersion: "1.0.0",
      name: "etcd-net",
      type: "macvlan",
      ipam: {
        type: "whereabouts",
        range: "10.70.0.0/24",
        etcd_host: etcd.endpoint.replace("http://", ""),
      },
    };
    const add = await runPlugin(cniEnv("ADD", "e1"), conf);
    expect(add.json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.70.0.1/24" }] });
    expect((await runPlugin(cniEnv("ADD", "e1"), conf)).json).toEqual(add.json);
    expect((await runPlugin(cniEnv("ADD", "e2"), conf)).json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.70.0.2/24" }] });
    expect((await runPlugin(cniEnv("DEL", "e1"), conf)).code).toBe(0);
    expect((await runPlugin(cniEnv("ADD", "e3"), conf)).json).toEqual({ cniVersion: "1.0.0", ips: [{ address: "10.70.0.1/24" }] });
  } finally {
    await etcd.stop();
  }
});

it("a store failure is reported, never swallowed: DEL answers 11, STATUS answers 50 (etcd unreachable)", async () => {
  const conf = (cniVersion: string) => ({
    cniVersion,
    name: "etcd-down",
    type: "macvlan",
    ipam: { type: "ipamkit", range: "10.71.0.0/24", etcd_host: "127.0.0.1:9" },
  });
  const del = await runPlugin(cniEnv("DEL", "d1"), conf("1.0.0"));
  expect(del.code).toBe(1);
  expect(del.json?.code).toBe(11);
  const add = await runPlugin(cniEnv("ADD", "d1"), conf("1.0.0"));
  expect(add.json?.code).toBe(11);
  const status = await runPlugin({ CNI_COMMAND: "STATUS", CNI_PATH: "/usr/lib/cni" }, conf("1.1.0"));
  expect(status.json?.code).toBe(50);
});

it("through the agent on etcd, an agent SIGKILLed and restarted (stale socket replaced) still serves etcd", async () => {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { startAgentProcess } = await import("../test/agent-process.js");
  const etcd = await startEtcd();
  // the helper's stop() removes an ipamkit-agentp- socket dir
  const socketPath = join(mkdtempSync(join(tmpdir(), "ipamkit-agentp-")), "agent.sock");
  useNode(join(socketPath, ".."));
  let agent = await startAgentProcess(socketPath);
  try {
    const conf = {
      cniVersion: "1.1.0",
      name: "etcd-agent-net",
      ipam: onNode({ type: "ipamkit", range: "10.75.0.0/24", etcd_host: etcd.endpoint, agent_socket: socketPath, agent_required: true }),
    };
    expect((await runPlugin(cniEnv("ADD", "a1"), conf)).json).toEqual({ cniVersion: "1.1.0", ips: [{ address: "10.75.0.1/24" }] });
    await agent.kill();
    agent = await startAgentProcess(socketPath);
    const again = await runPlugin(cniEnv("ADD", "a2"), conf);
    expect(again.stdout).not.toContain("Cannot find module");
    expect(again.json).toEqual({ cniVersion: "1.1.0", ips: [{ address: "10.75.0.2/24" }] });
  } finally {
    await agent.stop();
    await etcd.stop();
  }
});
