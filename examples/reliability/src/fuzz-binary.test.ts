import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FULL, scale, scratchDir, seed, Tally } from "../test/campaign.js";
import { byteDamage, type CniCase, cniCase, FLAT_DIR } from "../test/cni-input.js";
import { describeFailures, judge } from "../test/oracle.js";
import { type AgentProcess, pool, runBinary, startAgent } from "../test/subprocess.js";

// The fuzz campaign of RELIABILITY.md, binary part: generated invocations through the real built
// plugin (dist/ipamkit) as subprocesses — stdin as bytes (invalid UTF-8 spliced in, random bytes,
// oversized), some variables as raw non-UTF-8 bytes, a quarter of the cases forwarded to a running
// node-local agent. Each process must exit 0 or 1 within the bound with a result or one CNI error
// JSON line, and print no stack trace.
const CASES = scale(40, 600);
const BOUND_MS = 20_000;
const SEED = seed(20261204);

const sandbox = scratchDir("fuzzbin");
const storeDir = join(sandbox, "store");
const flatDir = join(sandbox, "flat");
let agent: AgentProcess;

beforeAll(async () => {
  mkdirSync(flatDir);
  agent = await startAgent();
});
afterAll(async () => {
  await agent?.stop();
  // byte damage inside a data_dir string can make a sibling directory of the sandbox: remove those too
  const parent = dirname(sandbox);
  for (const name of readdirSync(parent))
    if (name.startsWith(basename(sandbox))) rmSync(join(parent, name), { recursive: true, force: true });
});

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const inSandbox = (path: string) => resolve(path).startsWith(`${sandbox}/`);

/**
 * The case made safe to run as root: the flat file at a real path (the node's: IPAMKIT_CONFIGURATION_PATH),
 * and the file store kept in the sandbox (an absent or outside `data_dir` is pointed into it;
 * relative ones stay, they are refused). A quarter of the cases go through the agent: the node's
 * flat file names it, with `agent_required` so a fallback cannot hide a failure (a flat file that
 * is not a JSON object cannot name it: that case runs directly).
 */
function prepare(
  c: CniCase,
  viaAgent: boolean,
  flatAt: string,
): { stdin: string; flat: string | undefined; viaAgent: boolean } | undefined {
  let stdin = c.stdin.replaceAll(FLAT_DIR, flatAt);
  const contain = (ipam: Record<string, unknown>) => {
    const dir = ipam.data_dir;
    if (dir === undefined || (typeof dir === "string" && dir.startsWith("/") && !inSandbox(dir))) ipam.data_dir = storeDir;
  };
  let conf: unknown;
  try {
    conf = JSON.parse(stdin);
  } catch {
    conf = undefined;
  }
  if (isObject(conf) && isObject(conf.ipam)) {
    contain(conf.ipam);
    try {
      stdin = JSON.stringify(conf);
    } catch {
      // nested too deep to write back (JSON.stringify recurses): its data_dir cannot be contained here;
      // such cases run in-process (fuzz-dispatch.test.ts)
      return undefined;
    }
  }
  let flat = c.flat;
  let routed = false;
  const agentKeys = { agent_socket: agent.socketPath, agent_required: true };
  if (flat !== undefined) {
    try {
      const parsed: unknown = JSON.parse(flat);
      if (isObject(parsed) && typeof parsed.data_dir === "string" && parsed.data_dir.startsWith("/") && !inSandbox(parsed.data_dir)) {
        parsed.data_dir = storeDir;
        flat = JSON.stringify(parsed);
      }
      if (viaAgent && isObject(parsed)) {
        flat = JSON.stringify({ ...parsed, ...agentKeys });
        routed = true;
      }
    } catch {
      // not JSON: the plugin reports it
    }
  } else if (viaAgent) {
    flat = JSON.stringify(agentKeys);
    routed = true;
  }
  return { stdin, flat, viaAgent: routed };
}

/** Variables as a runtime can pass them: no NUL (a C string ends there), at most 32 Ki characters (Linux refuses a string over 128 KiB). */
const clean = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [[k, v.replaceAll("\u0000", "").slice(0, 32_768)]])));

/** One in eight cases sets one variable to raw bytes that are not UTF-8. */
const rawEnvArb = fc.oneof(
  { weight: 7, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom("CNI_CONTAINERID", "CNI_IFNAME", "CNI_ARGS", "CNI_COMMAND", "CNI_NETNS"),
      fc.uint8Array({ minLength: 1, maxLength: 6 }).map((a) => Buffer.concat([Buffer.from("c1"), Buffer.from(a.map((x) => 0x80 | x))])),
    ),
  },
);

it(`${CASES} generated invocations of the built binary (bytes on stdin, raw env, a quarter through the agent) end cleanly (seed ${SEED})`, {
  timeout: FULL ? 3_600_000 : 180_000,
}, async () => {
  const samples = fc.sample(fc.tuple(cniCase, byteDamage, rawEnvArb, fc.integer({ min: 0, max: 3 })), { numRuns: CASES, seed: SEED });
  const tally = new Tally();
  const failures: { problems: string[]; c: CniCase }[] = [];
  let slowest = 0;
  let agentCases = 0;
  let rawEnvCases = 0;
  let nonUtf8Stdin = 0;
  const tasks = samples.map(([c, hurt, rawEnv, lane], i) => async () => {
    // each case its own node flat-file directory (two run at a time)
    const own = join(flatDir, String(i));
    mkdirSync(own);
    const prepared = prepare(c, lane === 0, own);
    if (prepared === undefined) {
      tally.add("skipped:too-deep-to-contain");
      return;
    }
    const { stdin: text, flat, viaAgent } = prepared;
    if (flat !== undefined) writeFileSync(join(own, "whereabouts.conf"), flat);
    const bytes = hurt(Buffer.from(text, "utf8"));
    if (!Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes)) nonUtf8Stdin += 1;
    if (viaAgent) agentCases += 1;
    const env: Record<string, string> = { ...clean(c.env), IPAMKIT_CONFIGURATION_PATH: own };
    const raw = rawEnv === undefined ? undefined : { [rawEnv[0]]: rawEnv[1] };
    if (raw !== undefined) rawEnvCases += 1;
    const outcome = await runBinary(env, bytes, { boundMs: BOUND_MS, ...(raw === undefined ? {} : { rawEnv: raw }) });
    const command = raw?.CNI_COMMAND !== undefined ? "(raw)" : env.CNI_COMMAND;
    const verdict = judge(command, outcome, BOUND_MS);
    slowest = Math.max(slowest, outcome.ms);
    tally.add(verdict.label);
    if (verdict.problems.length > 0) failures.push({ problems: verdict.problems, c: { ...c, stdin: text } });
  });
  await pool(2, tasks);
  console.log(
    `fuzz (binary): ${CASES} processes, seed ${SEED}; ${agentCases} through the agent, ${rawEnvCases} with a raw non-UTF-8 variable, ${nonUtf8Stdin} with non-UTF-8 stdin; outcomes ${tally}; slowest ${Math.round(slowest)} ms; ${failures.length} failures`,
  );
  expect(describeFailures(failures)).toEqual([]);
  const agentErrors = agent
    .log()
    .split("\n")
    .filter((line) => /"level":(50|60)/.test(line));
  expect(agentErrors).toEqual([]);
});

it("oversized and unreadable stdin: direct and through the agent, a CNI error or a result, in time", { timeout: 300_000 }, async () => {
  const big = scale(8, 64) * 1024 * 1024;
  const conf = (ipam: Record<string, unknown>) => ({
    cniVersion: "1.0.0",
    name: "big",
    ipam: { type: "ipamkit", range: "10.9.0.0/24", data_dir: storeDir, ...ipam },
  });
  // two nodes: one without a flat file, one whose flat file names the agent (agent_required)
  const agentNode = join(sandbox, "agent-node");
  mkdirSync(agentNode, { recursive: true });
  writeFileSync(join(agentNode, "whereabouts.conf"), JSON.stringify({ agent_socket: agent.socketPath, agent_required: true }));
  const padded = (ipam: Record<string, unknown>) => Buffer.from(`${JSON.stringify(conf(ipam))}${" ".repeat(big)}`);
  const hugeValue = (ipam: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...conf(ipam), padding: "p".repeat(big) }));
  const direct = "/nonexistent";
  const cases: [string, Buffer, string][] = [
    [`a valid config padded to ${big >> 20} MiB`, padded({}), direct],
    [`a config with a ${big >> 20} MiB value`, hugeValue({}), direct],
    [`a valid config padded to ${big >> 20} MiB, through the agent`, padded({}), agentNode],
    [`a config with a ${big >> 20} MiB value, through the agent`, hugeValue({}), agentNode],
    [
      "2 MiB of random bytes",
      Buffer.from(fc.sample(fc.uint8Array({ minLength: 2 << 20, maxLength: 2 << 20 }), { numRuns: 1, seed: SEED })[0] ?? []),
      direct,
    ],
    ["invalid UTF-8 inside the network name", Buffer.from(JSON.stringify(conf({})).replace('"big"', '"b\xff\xfeg"'), "latin1"), direct],
    ["nothing at all", Buffer.alloc(0), direct],
  ];
  const env = { CNI_COMMAND: "ADD", CNI_CONTAINERID: "big1", CNI_IFNAME: "net1", CNI_NETNS: "/var/run/netns/x", CNI_PATH: "/opt/cni/bin" };
  const seen: string[] = [];
  for (const [what, bytes, node] of cases) {
    const outcome = await runBinary({ ...env, IPAMKIT_CONFIGURATION_PATH: node }, bytes, { boundMs: BOUND_MS * 3 });
    const verdict = judge("ADD", outcome, BOUND_MS * 3);
    seen.push(`${what}: ${verdict.label} in ${Math.round(outcome.ms)} ms`);
    expect(verdict.problems, what).toEqual([]);
  }
  console.log(`fuzz (binary, oversized): ${seen.join("; ")}`);
});
