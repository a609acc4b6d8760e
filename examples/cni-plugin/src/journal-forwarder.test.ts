import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JOURNAL_MAX_RECORDS, JOURNAL_RECORD_MAX_BYTES, parseJournalRecord } from "@ipamkit/cni";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startAgentProcess } from "../test/agent-process.js";
import { nodeFlatFile } from "../test/node-files.js";
import { cniEnv, runPlugin } from "../test/run-plugin.js";

// Issue 48, "DEL never strands a pod", at the binary: with no agent to answer and no direct mode
// (agent_required, or no Node on the host), a DEL is journaled in the node's agent_journal_dir and
// answered with success; an ADD still answers code 11, and with no socket at all its one line says
// the agent is not installed on this node. A DEL that cannot be journaled answers 11, never success.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-journal-fwd-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const NO_NODE = { PATH: "/nonexistent-bin" };
const socket = () => join(dir, "run", "agent.sock");
const journal = () => join(dir, "journal");
const netconf = (extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  name: "journal-net",
  type: "macvlan",
  ipam: { type: "ipamkit", range: "10.63.0.0/24", data_dir: join(dir, "store") },
  ...extra,
});
/** The node: an agent socket nothing serves, agent_required, and the journal (unless `keys` says otherwise). */
const node = (keys: Record<string, unknown> = {}) =>
  nodeFlatFile(dir, { agent_socket: socket(), agent_required: true, agent_journal_dir: journal(), ...keys });
const records = () => readdirSync(journal()).sort();
/** A DEL of attachment (id, net1) on the node `keys` describe. */
const del = (id: string, options: { keys?: Record<string, unknown>; env?: Record<string, string>; conf?: object } = {}) =>
  runPlugin(cniEnv("DEL", id, "net1", { ...node(options.keys), ...options.env }), options.conf ?? netconf());

describe("the DEL journal, written by the binary", () => {
  it("no agent installed: DEL is journaled (exit 0), the record is the call; ADD answers 11 saying the agent is not installed", async () => {
    const before = Date.now();
    const conf = netconf({ prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.63.0.5/24" }] } });
    const r = await del("c1", { env: { CNI_ARGS: "K8S_POD_NAMESPACE=apps;K8S_POD_NAME=web-0;K8S_POD_UID=u-1" }, conf });
    expect(r).toMatchObject({ code: 0, stdout: "" });
    expect(r.stderr).toBe(
      `ipamkit: ipamkit agent at ${socket()}: ENOENT: DEL journaled as ${journal()}/del:journal-net:c1:net1; the agent releases it when it starts\n`,
    );
    // created by the binary: root-only
    expect(statSync(journal()).mode & 0o777).toBe(0o700);
    expect(records()).toEqual(["del:journal-net:c1:net1"]);
    const path = join(journal(), "del:journal-net:c1:net1");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const record = parseJournalRecord(readFileSync(path, "utf8"));
    if (typeof record === "string") throw new Error(record);
    expect(record.stdin).toBe(JSON.stringify(conf));
    expect(record.env).toMatchObject({
      CNI_COMMAND: "DEL",
      CNI_CONTAINERID: "c1",
      CNI_IFNAME: "net1",
      CNI_ARGS: expect.stringContaining("K8S_POD_UID=u-1"),
    });
    expect(Object.keys(record.env).every((name) => name.startsWith("CNI_"))).toBe(true);
    expect(record.journaled).toBeGreaterThanOrEqual(before);
    expect(record.journaled).toBeLessThanOrEqual(Date.now());

    // the runtime's retry of the same DEL replaces its record: the journal counts attachments
    expect((await del("c1")).code).toBe(0);
    expect(records()).toEqual(["del:journal-net:c1:net1"]);
    // another attachment of the same container
    expect((await runPlugin(cniEnv("DEL", "c1", "net2", node()), netconf())).code).toBe(0);
    expect(records()).toEqual(["del:journal-net:c1:net1", "del:journal-net:c1:net2"]);

    const add = await runPlugin(cniEnv("ADD", "c2", "net1", node()), netconf());
    expect(add.code).toBe(1);
    expect(add.json).toMatchObject({
      cniVersion: "1.0.0",
      code: 11,
      msg: `ipamkit agent at ${socket()}: ENOENT: ipamkit's agent is not installed on this node (no socket; or its DaemonSet pod has not started yet): the ipamkit agent (DaemonSet) is not running on this node (agent_required)`,
    });
    expect(add.stdout.trim().split("\n")).toHaveLength(1);
    expect(records()).toHaveLength(2);
  });

  it("a crashed agent (its socket left, nothing listening): DEL journaled too; ADD says it is not running", async () => {
    mkdirSync(join(dir, "run"), { mode: 0o700 });
    const agent = await startAgentProcess(socket());
    await agent.kill();
    const r = await del("k1");
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/: ECONNREFUSED: DEL journaled as .*\/del:journal-net:k1:net1;/);
    const add = await runPlugin(cniEnv("ADD", "k2", "net1", node()), netconf());
    expect(add.json).toMatchObject({
      code: 11,
      msg: expect.stringMatching(/ECONNREFUSED: the ipamkit agent \(DaemonSet\) is not running on this node \(agent_required\)$/),
    });
    expect(String(add.json?.msg)).not.toContain("not installed");
  });

  it("without agent_required but without Node on the host: journaled; with Node: run directly, and a direct ADD removes the attachment's record", async () => {
    const noNode = await runPlugin(cniEnv("DEL", "n1", "net1", { ...node({ agent_required: false }), ...NO_NODE }), netconf());
    expect(noNode.code).toBe(0);
    expect(records()).toEqual(["del:journal-net:n1:net1"]);
    // with Node the binary runs the DEL itself: nothing journaled
    const direct = await runPlugin(cniEnv("DEL", "n2", "net1", node({ agent_required: false })), netconf());
    expect(direct).toMatchObject({ code: 0, stdout: "" });
    expect(direct.stderr).toMatch(/running the call directly/);
    expect(records()).toEqual(["del:journal-net:n1:net1"]);
    // an ADD of the journaled attachment run directly: its record goes first (a later replay must not release it)
    const add = await runPlugin(cniEnv("ADD", "n1", "net1", node({ agent_required: false })), netconf());
    expect(add.json).toMatchObject({ ips: [{ address: "10.63.0.1/24" }] });
    expect(records()).toEqual([]);
  });

  it("no agent_journal_dir: the DEL answers 11 as before (no journal); an invalid one: 11 saying why", async () => {
    const none = await runPlugin(cniEnv("DEL", "x1", "net1", node({ agent_journal_dir: undefined })), netconf());
    expect(none.json).toMatchObject({ code: 11, msg: expect.stringContaining("not installed on this node") });
    const relative = await runPlugin(cniEnv("DEL", "x1", "net1", node({ agent_journal_dir: "var/journal" })), netconf());
    expect(relative.json).toMatchObject({
      code: 11,
      msg: `ipamkit agent at ${socket()}: ENOENT: the agent is not running, and this DEL cannot be journaled in agent_journal_dir: agent_journal_dir is not an absolute path of at most 2048 bytes; the runtime retries it`,
    });
  });

  it("full: a DEL that would add a record answers 11 (the runtime retries it), one that replaces its own still succeeds", async () => {
    mkdirSync(journal(), { mode: 0o700 });
    expect((await del("f0")).code).toBe(0);
    for (let i = 1; i < JOURNAL_MAX_RECORDS; i++) writeFileSync(join(journal(), `del:other:c${i}:net1`), "{}", { mode: 0o600 });
    expect(records()).toHaveLength(JOURNAL_MAX_RECORDS);
    const full = await del("f1");
    expect(full.json).toMatchObject({
      code: 11,
      msg: expect.stringContaining(`: the journal is full (${JOURNAL_MAX_RECORDS} records); the runtime retries it`),
    });
    expect(records()).toHaveLength(JOURNAL_MAX_RECORDS);
    expect((await del("f0")).code).toBe(0);
    expect(records()).toHaveLength(JOURNAL_MAX_RECORDS);
  });

  it("bounded under concurrency: 40 DELs at once with 20 places left fill exactly 20, the rest answer 11", async () => {
    mkdirSync(journal(), { mode: 0o700 });
    for (let i = 0; i < JOURNAL_MAX_RECORDS - 20; i++) writeFileSync(join(journal(), `del:other:c${i}:net1`), "{}", { mode: 0o600 });
    const runs = await Promise.all(Array.from({ length: 40 }, (_, i) => del(`p${i}`)));
    const journaled = runs.filter((r) => r.code === 0).length;
    expect(journaled).toBe(20);
    for (const r of runs.filter((x) => x.code !== 0))
      expect(r.json).toMatchObject({ code: 11, msg: expect.stringContaining("the journal is full") });
    expect(records()).toHaveLength(JOURNAL_MAX_RECORDS);
    expect(records().filter((name) => name.startsWith("del:journal-net:p"))).toHaveLength(20);
  });

  it("a record too large, a directory others may write, a link, a file in the way: 11 naming why, nothing written", async () => {
    const large = await del("l1", { conf: netconf({ padding: "x".repeat(JOURNAL_RECORD_MAX_BYTES) }) });
    expect(large.json).toMatchObject({
      code: 11,
      msg: expect.stringContaining(`the record would be larger than ${JOURNAL_RECORD_MAX_BYTES} bytes`),
    });

    mkdirSync(journal(), { mode: 0o700 });
    chmodSync(journal(), 0o777);
    const open = await del("o1");
    expect(open.json).toMatchObject({ code: 11, msg: expect.stringContaining("it is not root's, or group or others may write it") });
    expect(records()).toEqual([]);
    chmodSync(journal(), 0o700);

    // the directory named through a link is not followed (O_NOFOLLOW)
    const linked = join(dir, "linked");
    symlinkSync(journal(), linked);
    const link = await del("s1", { keys: { agent_journal_dir: linked } });
    expect(link.json).toMatchObject({ code: 11, msg: expect.stringMatching(/cannot be journaled in .*linked: open: /) });
    expect(records()).toEqual([]);

    writeFileSync(join(dir, "file"), "");
    const file = await del("t1", { keys: { agent_journal_dir: join(dir, "file", "journal") } });
    expect(file.json).toMatchObject({
      code: 11,
      msg: expect.stringMatching(/cannot be journaled in .*file\/journal: open: Not a directory/),
    });
  });

  it("a call that names no record (an interface name with a space, no network name): 11, nothing written", async () => {
    const space = await runPlugin(cniEnv("DEL", "c1", "net 1", node()), netconf());
    expect(space.json).toMatchObject({ code: 11, msg: expect.stringContaining("cannot name a record") });
    const unnamed = await del("c1", { conf: { cniVersion: "1.0.0", ipam: { type: "ipamkit", range: "10.63.0.0/24" } } });
    expect(unnamed.json).toMatchObject({ code: 11, msg: expect.stringContaining("cannot name a record") });
    expect(() => readdirSync(journal())).toThrow(/ENOENT/);
  });
});
