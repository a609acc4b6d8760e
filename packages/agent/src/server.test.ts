import { spawnSync } from "node:child_process";
import { lstatSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dispatch, type IpamConfig } from "@ipamkit/cni";
import { delegatingStore, type IpamStore, StoreConflictError } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentUnavailableError, agentStats, forwardToAgent } from "./client.js";
import { confIn, env, makeAgentDir, nodeFs, rawCallTo } from "./server.fixtures.js";
import { type Agent, startAgent } from "./server.js";

// The raw frame (the native forwarder's) is in server.raw-frame.test.ts.

let dir: string;
let socketPath: string;
let agent: Agent | undefined;
let opened: number;
let conflicts: number;
let claimReads: number;
let poolReads: number;

/** The file store, counting opens and write conflicts. */
async function openStore(config: IpamConfig): Promise<IpamStore> {
  opened++;
  const store = createFileStore({ dir: config.dataDir });
  return delegatingStore(store, {
    readPool: (ref) => {
      poolReads++;
      return store.readPool(ref);
    },
    readClaim: (ref) => {
      claimReads++;
      return store.readClaim(ref);
    },
    async writePool(ref, pool, expected) {
      try {
        return await store.writePool(ref, pool, expected);
      } catch (error) {
        if (error instanceof StoreConflictError) conflicts++;
        throw error;
      }
    },
  });
}

const conf = (ipam: Record<string, unknown> = {}) => confIn(dir, ipam);
const rawCall = (bytes: string) => rawCallTo(socketPath, bytes);

beforeEach(async () => {
  ({ dir, socketPath } = makeAgentDir());
  opened = 0;
  conflicts = 0;
  claimReads = 0;
  poolReads = 0;
  agent = await startAgent({ socketPath, openStore, fs: nodeFs(dir) });
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("the agent", () => {
  it("answers exactly what the plugin would print in direct mode", async () => {
    const viaAgent = await forwardToAgent({ socketPath, env: env("ADD"), stdin: conf() });
    let direct = "";
    const code = await dispatch({
      env: env("ADD"),
      stdin: async () => conf(),
      stdout: (t) => (direct += t),
      stderr: () => undefined,
      fs: { exists: () => false, readText: () => "" },
      openStore: (c) => createFileStore({ dir: c.dataDir }) as unknown as Promise<IpamStore>,
    });
    expect(viaAgent).toEqual({ v: 1, exitCode: 0, stdout: direct, stderr: "" });
    expect(code).toBe(0);
    expect(JSON.parse(direct).ips).toEqual([{ address: "10.30.0.1/24" }]);
    const error = await forwardToAgent({ socketPath, env: env("ADD"), stdin: conf({ range: "10.30.0.0/33" }) });
    expect(error.exitCode).toBe(1);
    expect(JSON.parse(error.stdout)).toMatchObject({ code: 7 });
  });

  it("survives malformed requests and keeps serving", async () => {
    const cases = [
      "not json\n",
      '{"v":2,"env":{},"stdin":""}\n',
      '{"v":1,"env":{"PATH":"/bin"},"stdin":""}\n',
      '{"v":1,"env":{"CNI_COMMAND":7},"stdin":""}\n',
      '{"v":1,"env":{}}\n',
      '{"v":1,"op":"reboot"}\n',
      '{"v":1,"env":{},"stdin":"","frame":"zip"}\n',
      '{"v":1,"env":{},"stdin":"","frame":"raw"}\n',
      "[]\n",
      `${"x".repeat(5 * 1024 * 1024)}\n`,
      "",
    ];
    for (const bytes of cases) {
      const answer = JSON.parse(await rawCall(bytes)) as { exitCode: number; stdout: string };
      expect(answer.exitCode).toBe(1);
      expect(JSON.parse(answer.stdout)).toMatchObject({ code: 6, msg: expect.stringContaining("malformed request") });
    }
    expect(agent?.stats().malformed).toBe(cases.length);
    expect((await forwardToAgent({ socketPath, env: env("ADD"), stdin: conf() })).exitCode).toBe(0);
  });

  it("keeps one store per identity and queues calls of one pool: 50 concurrent ADDs, no conflicts", async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => forwardToAgent({ socketPath, env: env("ADD", `c${i}`), stdin: conf() })),
    );
    const addresses = answers.map((a) => (JSON.parse(a.stdout) as { ips: { address: string }[] }).ips[0]?.address);
    expect(new Set(addresses).size).toBe(50);
    expect(conflicts).toBe(0);
    expect(opened).toBe(1);
    expect(agent?.stats()).toMatchObject({ requests: 50, byExitCode: { 0: 50 }, inFlight: 0, stores: 1, conflicts: 0 });
    // one stdin: prepared once, the other 49 calls answered from the config cache
    expect(agent?.stats().configs).toEqual({ prepared: 1, cached: 49 });
    // the same counters over the socket (what an operator or the simulation reads)
    expect(await agentStats(socketPath)).toEqual(agent?.stats());
  });

  it("a flat file written, edited or removed between calls counts from the next call, config cache or not", async () => {
    const stdin = JSON.stringify({ cniVersion: "1.1.0", name: "net", ipam: { type: "ipamkit" } });
    const flat = join(dir, "whereabouts.conf");
    const addressAfter = async (content: object | undefined, containerId: string) => {
      if (content === undefined) rmSync(flat);
      else writeFileSync(flat, JSON.stringify({ data_dir: join(dir, "store"), ...content }));
      const answer = await forwardToAgent({ socketPath, env: env("ADD", containerId), stdin });
      return answer.exitCode === 0
        ? (JSON.parse(answer.stdout) as { ips: { address: string }[] }).ips[0]?.address
        : JSON.parse(answer.stdout).msg;
    };
    expect(await addressAfter({ range: "10.31.0.0/24" }, "a")).toBe("10.31.0.1/24");
    expect(await addressAfter({ range: "10.31.0.0/24" }, "b")).toBe("10.31.0.2/24");
    expect(await addressAfter({ range: "10.32.0.0/24" }, "c")).toBe("10.32.0.1/24");
    expect(await addressAfter(undefined, "d")).toMatch(/range/);
    expect(agent?.stats().configs).toEqual({ prepared: 3, cached: 1 });
  });

  it("a DEL deletes the overlapping-range claim its ADD wrote without reading it first", async () => {
    for (const command of ["ADD", "DEL"]) {
      const answer = await forwardToAgent({ socketPath, env: env(command), stdin: conf() });
      expect(answer.exitCode, answer.stdout).toBe(0);
    }
    expect(claimReads).toBe(0);
    const store = createFileStore({ dir: join(dir, "store") });
    expect(await store.listClaims("")).toEqual([]);
    const [pool, ...more] = await store.listPools();
    expect(more).toEqual([]);
    expect(pool && (await store.readPool(pool))?.pool.size).toBe(0);
    await store.close();
  });

  describe("per-node blocks: what a steady call reads, agent_required or not", () => {
    const blocks = (network: string, extra: Record<string, unknown> = {}) => ({
      node_block_size: 16,
      node_name: "node-a",
      network_name: network,
      ...extra,
    });
    /** The node's flat file: the agent keys are the node's (issue 47). */
    const onNode = (required: boolean) =>
      writeFileSync(join(dir, "whereabouts.conf"), JSON.stringify({ agent_socket: socketPath, agent_required: required }));
    const call = async (command: string, id: string, ipam: Record<string, unknown>) => {
      const answer = await forwardToAgent({ socketPath, env: env(command, id), stdin: conf(ipam) });
      expect(answer.exitCode, answer.stdout).toBe(0);
    };
    /** Claim and pool reads per call over `calls`. */
    const perCall = async (calls: [string, string][], ipam: Record<string, unknown>) => {
      const [claims, pools] = [claimReads, poolReads];
      for (const [command, id] of calls) await call(command, id, ipam);
      return { claims: (claimReads - claims) / calls.length, pools: (poolReads - pools) / calls.length };
    };

    it("a steady ADD in the node's block reads its first unclaimed block's affinity claim and no pool; a DEL reads neither", async () => {
      // Before issue 38 the agent, with agent_required, remembered that block as unclaimed and read
      // no claim at all: a direct-mode writer of the node could claim it and place a key there unseen.
      // On this whole-pool (file) store an ADD reads that claim once, as its commit's fence just
      // before its write (another process of the node may claim it meanwhile), its view taken as
      // remembered; a DEL writes the block its recalled pool holds the key in, at that version.
      for (const [network, required] of [
        ["blue", true],
        ["green", false],
      ] as const) {
        onNode(required);
        const ipam = blocks(network);
        await call("ADD", `${network}-first`, ipam); // claims the node's first block
        const adds = await perCall(
          Array.from({ length: 5 }, (_, i) => ["ADD", `${network}${i}`]),
          ipam,
        );
        const dels = await perCall(
          Array.from({ length: 5 }, (_, i) => ["DEL", `${network}${i}`]),
          ipam,
        );
        expect({ network, adds, dels }).toEqual({ network, adds: { claims: 1, pools: 0 }, dels: { claims: 0, pools: 0 } });
      }
    });

    it("an ADD into the node's second block reads no pool: its full first block is touched at the recalled version", async () => {
      for (const [network, required] of [
        ["blue", true],
        ["green", false],
      ] as const) {
        onNode(required);
        const ipam = blocks(network);
        for (let i = 0; i < 20; i++) await call("ADD", `${network}${i}`, ipam); // two blocks of 16
        const adds = await perCall(
          Array.from({ length: 3 }, (_, i) => ["ADD", `${network}${i + 20}`]),
          ipam,
        );
        // before issue 38: 0 pool reads with agent_required (its own write was taken for "not held",
        // unchecked); then one (the first block read afresh); now 0 again, and checked: the first
        // block is written onto itself at its recalled version before the write into the second
        expect({ network, pools: adds.pools }).toEqual({ network, pools: 0 });
      }
      const store = createFileStore({ dir: join(dir, "store") });
      const pools = await store.listPools();
      expect(pools.filter((p) => p.network === "blue")).toHaveLength(2);
      for (const ref of pools) expect((await store.readPool(ref))?.pool.size).toBeGreaterThan(0);
      await store.close();
    });
  });

  it("listens with mode 0600, replaces a stale socket, refuses to start beside a live one or over a file", async () => {
    expect(statSync(socketPath).mode & 0o777).toBe(0o600);
    await expect(startAgent({ socketPath, openStore })).rejects.toThrow(/another agent is serving/);
    const other = join(dir, "plain-file");
    writeFileSync(other, "keep me");
    await expect(startAgent({ socketPath: other, openStore })).rejects.toThrow(/not a socket/);
    // a stale socket: bound by a process that is gone (SIGKILLed while listening: the file stays;
    // closing a listener in this process would unlink it)
    const stale = join(dir, "stale.sock");
    const listen = "require('node:net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))";
    spawnSync(process.execPath, ["-e", listen, stale]);
    expect(lstatSync(stale).isSocket()).toBe(true);
    const restarted = await startAgent({ socketPath: stale, openStore });
    expect((await forwardToAgent({ socketPath: stale, env: env("ADD"), stdin: conf() })).exitCode).toBe(0);
    await restarted.close();
  });

  it("close() lets calls in flight finish, then removes the socket", async () => {
    const inFlight = Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => forwardToAgent({ socketPath, env: env("ADD", `f${i}`), stdin: conf() })),
    );
    await new Promise((r) => setTimeout(r, 5));
    await agent?.close();
    agent = undefined;
    const settled = await inFlight;
    for (const s of settled) {
      // a call accepted before close() is answered; one that arrived after is refused (and the binary falls back)
      if (s.status === "fulfilled") expect(s.value.exitCode).toBe(0);
      else expect(s.reason).toBeInstanceOf(AgentUnavailableError);
    }
    expect(() => statSync(socketPath)).toThrow();
    await expect(forwardToAgent({ socketPath, env: env("ADD"), stdin: conf() })).rejects.toMatchObject({ kind: "unreachable" });
  });
});
