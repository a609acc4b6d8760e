import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, type PluginRun, runPlugin } from "../test/run-plugin.js";

// Issue 48, end to end on one node with the file store: the real binary and the real agent
// process. The agent goes away (as when its DaemonSet is deleted); pods are deleted meanwhile —
// every DEL succeeds, journaled; the agent comes back and replays the journal: every journaled
// reservation freed, none left, none freed while live. DELs racing the agent's start either reach
// it or are journaled, and end up released either way.

let dir: string;
let agent: AgentProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-journal-e2e-"));
  useNode(dir);
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "run", "agent.sock");
const journal = () => join(dir, "journal");
const netconf = () => ({
  cniVersion: "1.1.0",
  name: "journal-net",
  type: "macvlan",
  ipam: onNode({
    type: "ipamkit",
    range: "10.64.0.0/24",
    data_dir: join(dir, "store"),
    agent_socket: socketPath(),
    agent_required: true,
    agent_journal_dir: journal(),
  }),
});
const pod = (i: number) => ({ CNI_ARGS: `K8S_POD_NAMESPACE=apps;K8S_POD_NAME=pod-${i};K8S_POD_UID=uid-${i}` });
const records = () => (existsSync(journal()) ? readdirSync(journal()) : []);

/** Container ID → address held in the network's pool. */
async function held(): Promise<Map<string, string>> {
  const store = createFileStore({ dir: join(dir, "store") });
  try {
    const pool = await store.readPool({ network: "", cidr: "10.64.0.0/24" });
    return new Map((pool?.pool.reservations() ?? []).map((r) => [r.key.containerId, `10.64.0.${r.offset}/24`]));
  } finally {
    await store.close();
  }
}

async function until(what: string, test: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; agent log:\n${agent?.log() ?? ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the DEL journal, end to end (binary and agent, file store)", () => {
  it("agent gone, 10 pods deleted: every DEL exit 0; agent back: all 10 freed, the 5 live ones kept", async () => {
    agent = await startAgentProcess(socketPath());
    const addresses = new Map<string, string>();
    for (let i = 0; i < 15; i++) {
      const r = await runPlugin(cniEnv("ADD", `c${i}`, "net1", pod(i)), netconf());
      expect(r.code, r.stdout).toBe(0);
      addresses.set(`c${i}`, (r.json as { ips: { address: string }[] }).ips[0]?.address ?? "");
    }
    // the DaemonSet deleted: SIGTERM, the socket removed
    await agent.stop();
    agent = undefined;
    expect(existsSync(socketPath())).toBe(false);
    const dels = await Promise.all(Array.from({ length: 10 }, (_, i) => runPlugin(cniEnv("DEL", `c${i}`, "net1", pod(i)), netconf())));
    for (const r of dels) {
      expect(r).toMatchObject({ code: 0, stdout: "" });
      expect(r.stderr).toMatch(/ENOENT: DEL journaled as /);
    }
    expect(records()).toHaveLength(10);
    // nothing released yet: the journal holds the releases
    expect((await held()).size).toBe(15);
    // meanwhile ADD is refused, saying why
    const add = await runPlugin(cniEnv("ADD", "new", "net1", pod(99)), netconf());
    expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining("ipamkit's agent is not installed on this node") });

    agent = await startAgentProcess(socketPath());
    await until("the journal replayed", () => records().length === 0);
    const after = await held();
    expect([...after.keys()].sort()).toEqual(["c10", "c11", "c12", "c13", "c14"]);
    for (const [id, address] of after) expect(address).toBe(addresses.get(id));
    expect(agent.log().match(/"msg":"DEL journal: replayed"/g)).toHaveLength(10);
  });

  it("DELs racing the agent's start: each reaches the agent or is journaled, and every one is released", async () => {
    agent = await startAgentProcess(socketPath(), { args: ["--journal-interval", "0.2"] });
    for (let i = 0; i < 20; i++) expect((await runPlugin(cniEnv("ADD", `s${i}`, "net1", pod(i)), netconf())).code).toBe(0);
    await agent.stop();
    agent = undefined;
    // the agent starts while DELs run, one every 20 ms until it listens (the last ones race its
    // start), then the rest once it listens
    let listening = false;
    const starting = startAgentProcess(socketPath(), { args: ["--journal-interval", "0.2"] }).then((started) => {
      listening = true;
      return started;
    });
    const early: Promise<PluginRun>[] = [];
    while (!listening && early.length < 19) {
      const i = early.length;
      early.push(runPlugin(cniEnv("DEL", `s${i}`, "net1", pod(i)), netconf()));
      await new Promise((r) => setTimeout(r, 20));
    }
    agent = await starting;
    const during = await Promise.all(early);
    const late = await Promise.all(
      Array.from({ length: 20 - during.length }, (_, k) => {
        const i = during.length + k;
        return runPlugin(cniEnv("DEL", `s${i}`, "net1", pod(i)), netconf());
      }),
    );
    for (const r of [...during, ...late]) expect(r.code, r.stdout).toBe(0);
    expect(during[0]?.stderr).toMatch(/DEL journaled/);
    for (const r of late) expect(r.stderr).toBe("");
    const journaled = during.filter((r) => r.stderr.includes("DEL journaled")).length;
    await until("every address released", async () => (await held()).size === 0 && records().length === 0);
    console.log(
      `journal: of ${during.length} DELs during the agent's start ${journaled} were journaled, ${during.length - journaled} reached it; ${late.length} after`,
    );
  });
});
