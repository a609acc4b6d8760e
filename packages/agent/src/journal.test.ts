import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type IpamConfig, JOURNAL_RECORD_MAX_BYTES, journalRecordNameOf } from "@ipamkit/cni";
import { type IpamStore, StoreUnavailableError } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { forwardToAgent } from "./client.js";
import { confIn, env, makeAgentDir, nodeFs } from "./server.fixtures.js";
import { type Agent, type AgentOptions, startAgent } from "./server.js";

// The agent's side of the DEL journal (journal.ts) on the real file store: what the binary
// journaled while no agent ran is replayed by exact key at start and every scan; a record that
// fails is retried, a bounded number of times; an unreadable one is dropped, never replayed; and
// the ordering rule — an ADD the agent serves removes its attachment's record first, under the
// lock a replay takes — keeps a replay from releasing what a later ADD holds. The binary writing
// these records is tested in examples/cni-plugin (journal-forwarder.test.ts, journal-replay.test.ts).

let dir: string;
let socketPath: string;
let agent: Agent | undefined;
let log: string[];
/** Per data dir: opening that store waits for its gate (a slow store); a dir in `down` fails (a store that is down). */
let gates: Map<string, { opened: Promise<void>; open: () => void }>;
let down: Set<string>;

const journalDir = () => join(dir, "journal");
/** The network config `net` (its store in dir/store), or another network with its own store and range. */
const conf = (network = "net") =>
  network === "net"
    ? confIn(dir)
    : JSON.stringify({ ...JSON.parse(confIn(dir, { data_dir: join(dir, network), range: "10.31.0.0/24" })), name: network });

/** A store that opens only when the test says. */
function gate(dataDir: string): () => void {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(dataDir, { opened, open });
  return open;
}

/** The file store; one whose data dir has a gate opens when the gate does, one that is `down` fails (code 11). */
async function openStore(config: IpamConfig): Promise<IpamStore> {
  await gates.get(config.dataDir)?.opened;
  if (down.has(config.dataDir)) throw new StoreUnavailableError("the store is down (test)");
  return createFileStore({ dir: config.dataDir });
}

/** The node's flat file names this agent's socket and the journal (as the chart writes it). */
function nodeWithJournal(extra: Record<string, unknown> = {}): void {
  writeFileSync(join(dir, "whereabouts.conf"), JSON.stringify({ agent_socket: socketPath, agent_journal_dir: journalDir(), ...extra }));
}

/** A record as the binary writes it (forwarder-journal.h): the DEL call, under its attachment's name. */
function journal(containerId: string, stdin = conf(), extra: Record<string, unknown> = {}): string {
  mkdirSync(journalDir(), { recursive: true, mode: 0o700 });
  const callEnv = { ...env("DEL", containerId) };
  const name = journalRecordNameOf(callEnv, stdin);
  if (name === undefined) throw new Error("no record name");
  writeFileSync(join(journalDir(), name), `${JSON.stringify({ v: 1, journaled: Date.now(), env: callEnv, stdin, ...extra })}\n`, {
    mode: 0o600,
  });
  return name;
}

const records = () => (existsSync(journalDir()) ? readdirSync(journalDir()).sort() : []);
const logger = () => pino({ level: "debug" }, { write: (line: string) => log.push(line) } as unknown as pino.DestinationStream);

async function start(options: Partial<AgentOptions> = {}): Promise<Agent> {
  agent = await startAgent({ socketPath, openStore, fs: nodeFs(dir), logger: logger(), journal: { scanIntervalMs: 50 }, ...options });
  return agent;
}

/** The container IDs holding an address in network `net`'s pool, with their addresses. */
async function held(): Promise<Record<string, string>> {
  const store = createFileStore({ dir: join(dir, "store") });
  try {
    const pool = await store.readPool({ network: "", cidr: "10.30.0.0/24" });
    const out: Record<string, string> = {};
    for (const r of pool?.pool.reservations() ?? []) out[r.key.containerId] = `10.30.0.${r.offset}`;
    return out;
  } finally {
    await store.close();
  }
}

/** ADD through the agent: the address it answered. */
async function add(containerId: string, stdin = conf()): Promise<string> {
  const answer = await forwardToAgent({ socketPath, env: env("ADD", containerId), stdin });
  expect(answer.exitCode, answer.stdout).toBe(0);
  return (JSON.parse(answer.stdout) as { ips: { address: string }[] }).ips[0]?.address ?? "";
}

async function until(what: string, test: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; log:\n${log.join("")}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeEach(() => {
  ({ dir, socketPath } = makeAgentDir());
  log = [];
  gates = new Map();
  down = new Set();
  nodeWithJournal();
});
afterEach(async () => {
  for (const { open } of gates.values()) open();
  await agent?.close();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("the DEL journal, replayed by the agent", () => {
  it("at start: each record's DEL releases exactly its attachment; the record is removed", async () => {
    // two pods' addresses, then the agent goes away and one pod is deleted (the binary journals its DEL)
    await start();
    const [a, b] = [await add("c1"), await add("c2")];
    await agent?.close();
    const name = journal("c1");
    expect(name).toBe("del:net:c1:net1");
    await start();
    await until("the replay", () => agent?.stats().journal.replayed === 1);
    expect(await held()).toEqual({ c2: "10.30.0.2" });
    expect([a, b]).toEqual(["10.30.0.1/24", "10.30.0.2/24"]);
    expect(records()).toEqual([]);
    expect(agent?.stats().journal).toEqual({ replayed: 1, failed: 0, dropped: 0, pending: 0 });
    expect(log.join("")).toMatch(/"record":"del:net:c1:net1".*"msg":"DEL journal: replayed"/);
  });

  it("a DEL journaled while the agent runs (after its first scan) is replayed by a later scan", async () => {
    await start();
    await add("late");
    await until("the first scan", () => log.some((line) => line.includes("ipamkit agent listening")));
    journal("late");
    await until("the replay", () => agent?.stats().journal.replayed === 1);
    expect(await held()).toEqual({});
  });

  it("ordering: an ADD of a journaled attachment before its replay keeps its address — the replay never releases it", async () => {
    // the pod's address is held; its DEL was journaled while no agent ran; then the same attachment is
    // ADDed again (CNI allows it after a DEL) before the journal's turn: the replay of another
    // record first hangs on a slow store
    await start();
    const first = await add("k1");
    await agent?.close();
    const open = gate(join(dir, "a-slow"));
    journal("s1", conf("a-slow"));
    const k1 = journal("k1");
    expect(records()).toEqual(["del:a-slow:s1:net1", k1]);
    await start();
    await until("the slow replay to start", () => log.some((line) => line.includes("ipamkit agent listening")));
    // ADD is idempotent: it finds the reservation still there and keeps it — which only the record's removal protects
    expect(await add("k1")).toBe(first);
    expect(records()).toEqual(["del:a-slow:s1:net1"]);
    open();
    await until("the slow record replayed", () => agent?.stats().journal.replayed === 1);
    // further scans: nothing more to replay, k1 keeps its address
    await new Promise((r) => setTimeout(r, 200));
    expect(agent?.stats().journal).toMatchObject({ replayed: 1, pending: 0 });
    expect(await held()).toEqual({ k1: first.split("/")[0] });
  });

  it("ordering under races: 30 attachments journaled, the agent started and all ADDed again at once — each keeps what its ADD answered", async () => {
    await start();
    const ids = Array.from({ length: 30 }, (_, i) => `r${i}`);
    for (const id of ids) await add(id);
    await agent?.close();
    for (const id of ids) journal(id);
    await start({ journal: { scanIntervalMs: 1 } });
    // whichever comes first per attachment — its replay or its new ADD — the end state is the ADD's answer
    const answers = await Promise.all(ids.map((id) => add(id)));
    await new Promise((r) => setTimeout(r, 300));
    const now = await held();
    expect(Object.keys(now).sort()).toEqual([...ids].sort());
    expect(ids.map((id) => `${now[id]}/24`)).toEqual(answers);
    expect(new Set(answers).size).toBe(ids.length);
    expect(records()).toEqual([]);
  });

  it("a served DEL removes its attachment's record (the journaled DEL is done)", async () => {
    await start({ journal: { scanIntervalMs: 60_000 } });
    await add("d1");
    const name = journal("d1");
    expect(records()).toEqual([name]);
    expect((await forwardToAgent({ socketPath, env: env("DEL", "d1"), stdin: conf() })).exitCode).toBe(0);
    expect(records()).toEqual([]);
  });

  it("keeps replaying a record whose DEL fails, a bounded number of times, then drops it (logged: the reconciler frees it)", async () => {
    await start();
    await add("f1");
    await agent?.close();
    journal("f1");
    down.add(join(dir, "store"));
    await start({ journal: { scanIntervalMs: 20, maxAttempts: 3, retryMaxMs: 40 } });
    await until("the record dropped", () => agent?.stats().journal.dropped === 1);
    expect(agent?.stats().journal).toMatchObject({ replayed: 0, failed: 3, dropped: 1 });
    expect(records()).toEqual([]);
    expect(log.join("")).toMatch(/"attempt":1.*DEL journal: replay failed; retried later/);
    expect(log.join("")).toMatch(/its DEL failed 3 times.*the reconciler frees its reservation as an orphan/);
    // its reservation is left for the reconciler, never released by a guess
    expect(Object.keys(await held())).toEqual(["f1"]);
  });

  it("a store down for a while: retried with backoff, replayed once it is back", async () => {
    await start();
    await add("b1");
    await agent?.close();
    journal("b1");
    down.add(join(dir, "store"));
    await start({ journal: { scanIntervalMs: 20, maxAttempts: 1000, retryMaxMs: 50 } });
    await until("two failures", () => (agent?.stats().journal.failed ?? 0) >= 2);
    expect(records()).toHaveLength(1);
    down.clear();
    await until("the replay", () => agent?.stats().journal.replayed === 1);
    expect(await held()).toEqual({});
  });

  it("unreadable records are dropped unreplayed; temporary files and foreign entries are handled; the agent keeps serving", async () => {
    await start();
    await add("keep");
    await agent?.close();
    mkdirSync(journalDir(), { mode: 0o700 });
    const put = (name: string, text: string) => writeFileSync(join(journalDir(), name), text, { mode: 0o600 });
    put("del:net:bad1:net1", "not json");
    put("del:net:bad2:net1", JSON.stringify({ v: 9, journaled: 1, env: {}, stdin: "" }));
    // an ADD is no record of a DEL
    put("del:net:bad3:net1", JSON.stringify({ v: 1, journaled: 1, env: env("ADD", "bad3"), stdin: conf() }));
    // the call of another attachment under this name: replaying it could release what an ADD of
    // `keep` no longer protects (its ADD purges only `keep`'s own record)
    put("del:net:bad4:net1", JSON.stringify({ v: 1, journaled: 1, env: env("DEL", "keep"), stdin: conf() }));
    put("del:net:bad5:net1", "x".repeat(JOURNAL_RECORD_MAX_BYTES + 1));
    mkdirSync(join(journalDir(), "del:net:bad6:net1"));
    put(".tmp-1-1", "half a record");
    utimesSync(join(journalDir(), ".tmp-1-1"), new Date(0), new Date(0));
    put(".tmp-2-2", "being written");
    put("README", "an operator's note");
    await start();
    await until("the drops", () => agent?.stats().journal.dropped === 5);
    expect(records()).toEqual([".tmp-2-2", "README", "del:net:bad6:net1"]);
    expect(await held()).toEqual({ keep: "10.30.0.1" });
    const text = log.join("");
    expect(text).toContain('"reason":"not JSON"');
    expect(text).toContain('"reason":"unknown version 9"');
    expect(text).toContain('not a DEL (CNI_COMMAND \\"ADD\\")');
    expect(text).toContain('its call is the attachment \\"del:net:keep:net1\\", not this record');
    expect(text).toContain(`"record":"del:net:bad5:net1","reason":"larger than ${JOURNAL_RECORD_MAX_BYTES} bytes"`);
    expect(text).toMatch(/"entry":"README".*not a record; left alone/);
    expect(text).toMatch(/"entry":"del:net:bad6:net1".*not a record; left alone/);
    expect(await add("more")).toBe("10.30.0.2/24");
  });

  it("an agent on another socket than the node's agent_socket (a test's, a second one) leaves the node's journal alone", async () => {
    await start();
    await add("o1");
    await agent?.close();
    const name = journal("o1");
    nodeWithJournal({ agent_socket: "/run/ipamkit/agent.sock" });
    await start();
    await until("the note", () => log.some((line) => line.includes("this agent does not serve the node's agent_socket")));
    await new Promise((r) => setTimeout(r, 200));
    expect(records()).toEqual([name]);
    expect(Object.keys(await held())).toEqual(["o1"]);
    // nor does an ADD it serves purge the node's records
    await add("o1");
    expect(records()).toEqual([name]);
  });

  it("a journal directory others may write is not used; no agent_journal_dir: no journal at all", async () => {
    await start();
    await add("u1");
    await agent?.close();
    const name = journal("u1");
    chmodSync(journalDir(), 0o777);
    await start();
    await until("the refusal", () => log.some((line) => line.includes("DEL journal: directory not used")));
    expect(log.join("")).toContain("group or others may write it");
    await agent?.close();
    chmodSync(journalDir(), 0o700);
    writeFileSync(join(dir, "whereabouts.conf"), JSON.stringify({ agent_socket: socketPath }));
    await start();
    await new Promise((r) => setTimeout(r, 200));
    expect(records()).toEqual([name]);
    expect(Object.keys(await held())).toEqual(["u1"]);
    // and an agent started without the journal option (the library's default) reads none either
    await agent?.close();
    nodeWithJournal();
    await start({ journal: undefined });
    await new Promise((r) => setTimeout(r, 200));
    expect(records()).toEqual([name]);
  });
});
