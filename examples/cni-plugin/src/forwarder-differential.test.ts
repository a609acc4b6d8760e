import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_TIMEOUT_DEFAULT_SECONDS, agentSettings, type ConfigFs, jsonNesting, ROUTE_JSON_MAX_NESTING } from "@ipamkit/cni";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { compileC } from "../test/compile-c.js";
import { bytesOf, configTree, flatTree, writing } from "../test/route-corpus.js";

// Issue 47: the binary's C reader (src/forwarder-json.h, src/forwarder-route.h) and the TypeScript
// reading of the same bytes (Node's UTF-8 decoding, JSON.parse, agentSettings()) must agree on
// every routing-relevant answer: whether the config is JSON at all, whether the call goes to the
// agent, and with which socket (byte for byte), agent_required, timeout and trusted uid. Before
// that issue they routed differently in 224 of 15 154 cases (`"agent_uid\u0000"` read as
// agent_uid, `"ipam\u0000"` as ipam). The C reader runs under ASan and UBSan: undefined behaviour
// on any case (a 1e300 cast to long long) fails the test too.

const RUNS = process.env.RELIABILITY === "full" ? 100_000 : 15_000;
const SEED = Number(process.env.RELIABILITY_SEED ?? 47);

let work: string;
let reader: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "ipamkit-diff-"));
  reader = join(work, "route-reader");
  compileC({ source: join(import.meta.dirname, "..", "test", "route-reader.c"), output: reader });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Answer {
  readable: boolean;
  agent: boolean;
  socket: string;
  required: boolean;
  timeout: number;
  uid: number;
}

/** What the TypeScript side answers for the same bytes. */
function typescriptAnswer(config: Buffer, flat: Buffer | undefined): Answer {
  const text = config.toString("utf8");
  let readable = true;
  try {
    JSON.parse(text);
    readable = jsonNesting(text) <= ROUTE_JSON_MAX_NESTING;
  } catch {
    readable = false;
  }
  const path = "/node/whereabouts.conf";
  const fs: ConfigFs = {
    configurationPath: path,
    exists: (p) => p === path && flat !== undefined,
    readText: () => flat?.toString("utf8") ?? "",
  };
  const route = agentSettings(text, fs);
  return {
    readable,
    agent: route !== undefined,
    socket: route === undefined ? "-" : Buffer.from(route.socket, "utf8").toString("hex") || "-",
    required: route?.required ?? false,
    timeout: route === undefined ? AGENT_TIMEOUT_DEFAULT_SECONDS : (route.timeoutSeconds ?? AGENT_TIMEOUT_DEFAULT_SECONDS),
    uid: route?.uid === undefined ? -1 : route.uid + 0,
  };
}

/** The C reader's answers, one per case, from one process. */
function cAnswers(cases: readonly [Buffer, Buffer | undefined][]): Answer[] {
  const frames: Buffer[] = [];
  const length = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  for (const [config, flat] of cases)
    frames.push(length(config.length), config, length(flat?.length ?? 0xffffffff), flat ?? Buffer.alloc(0));
  const r = spawnSync(reader, [], { input: Buffer.concat(frames), maxBuffer: 256 << 20, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`route-reader exited ${r.status} (${r.signal}):\n${r.stderr.slice(0, 4000)}`);
  return r.stdout
    .trimEnd()
    .split("\n")
    .map((line) => {
      const [readable, agent, socket, required, timeout, uid] = line.split(" ");
      const answer = { readable: readable === "1", agent: agent === "1", socket: socket ?? "", required: required === "1" };
      return agent === "1"
        ? { ...answer, timeout: Number(timeout), uid: Number(uid) }
        : { ...answer, socket: "-", required: false, timeout: AGENT_TIMEOUT_DEFAULT_SECONDS, uid: -1 };
    });
}

it(`the C reader and the TypeScript reader route the same way on ${RUNS} generated configs and flat files: 0 disagreements`, {
  timeout: process.env.RELIABILITY === "full" ? 3_600_000 : 600_000,
}, () => {
  const flatOrNone = fc.option(
    fc.tuple(flatTree, writing).map(([tree, how]) => bytesOf(tree, how)),
    { freq: 6 },
  );
  const cases = fc.sample(
    fc.tuple(
      fc.tuple(configTree, writing).map(([tree, how]) => bytesOf(tree, how)),
      flatOrNone,
    ),
    { numRuns: RUNS, seed: SEED },
  );
  const typed: [Buffer, Buffer | undefined][] = cases.map(([config, flat]) => [config, flat ?? undefined]);
  const c = cAnswers(typed);
  expect(c).toHaveLength(typed.length);
  const disagreements = typed.flatMap(([config, flat], i) => {
    const ts = typescriptAnswer(config, flat);
    return JSON.stringify(ts) === JSON.stringify(c[i])
      ? []
      : [{ config: config.toString("latin1").slice(0, 300), flat: flat?.toString("latin1").slice(0, 300), ts, c: c[i] }];
  });
  const routed = c.filter((a) => a.agent).length;
  const unreadable = c.filter((a) => !a.readable).length;
  console.log(
    `differential: ${typed.length} cases (seed ${SEED}), ${routed} routed to the agent, ${unreadable} configs not JSON, ${disagreements.length} disagreements`,
  );
  expect(disagreements.slice(0, 5)).toEqual([]);
  // the corpus reaches both answers and the edges it is for
  expect(routed).toBeGreaterThan(typed.length / 20);
  expect(unreadable).toBeGreaterThan(typed.length / 50);
  expect(c.some((a) => a.agent && a.uid >= 0)).toBe(true);
  expect(c.some((a) => a.agent && a.required)).toBe(true);
});

it("the fixed cases of the issue: NUL in keys, a backslash before a raw NUL, 1e300, -0, nesting at the bound", () => {
  // a config whose arrays and objects nest exactly n deep
  const nested = (n: number) => `{"ipam":{},"d":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`;
  const socket = '"agent_socket":"/run/a.sock"';
  const cases: [string, string | undefined][] = [
    ['{"ipam":{}}', `{${socket},"agent_uid\\u0000":65534}`],
    ['{"ipam":{}}', `{${socket},"agent_uid":1e300}`],
    ['{"ipam":{}}', `{${socket},"agent_uid":-0}`],
    ['{"ipam":{}}', `{${socket},"agent_socket\\u0000":"/evil.sock"}`],
    ['{"ipam":{"agent_timeout":1},"ipam\\u0000":{"agent_timeout":2}}', `{${socket}}`],
    ['{"ipam":{},"x":"\\\u0000"}', `{${socket}}`],
    [nested(ROUTE_JSON_MAX_NESTING), `{${socket}}`],
    [nested(ROUTE_JSON_MAX_NESTING + 1), `{${socket}}`],
  ];
  const typed: [Buffer, Buffer | undefined][] = cases.map(([config, flat]) => [
    Buffer.from(config, "latin1"),
    flat === undefined ? undefined : Buffer.from(flat),
  ]);
  const c = cAnswers(typed);
  expect(c).toEqual(typed.map(([config, flat]) => typescriptAnswer(config, flat)));
  expect(c.map((a) => [a.readable, a.agent, a.uid, a.timeout])).toEqual([
    [true, true, -1, 25],
    [true, true, -1, 25],
    [true, true, 0, 25],
    [true, true, -1, 25],
    [true, true, -1, 1],
    [false, false, -1, 25],
    [true, true, -1, 25],
    [false, false, -1, 25],
  ]);
});
