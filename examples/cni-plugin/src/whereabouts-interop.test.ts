import { readFileSync, writeFileSync } from "node:fs";
import { agentStats } from "@ipamkit/agent/client";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAgentProcess } from "../test/agent-process.js";
import {
  type Attachment,
  attachment,
  type Binary,
  type CallResult,
  cni,
  duplicateAddresses,
  failures,
  type Interop,
  interopConf,
  startInterop,
} from "../test/whereabouts.js";
import { problems, readState } from "../test/whereabouts-state.js";

// ipamkit's CNI binary and a real Whereabouts (v0.9.2, built by test-infra/whereabouts) on the
// same pools of a real kube-apiserver that has Whereabouts' own CRDs. Every scenario has its own
// range; every one ends by reading the IPPool and the ORIPs back from the API server.

let interop: Interop;
// A missing build (Whereabouts or kube-apiserver) fails every test with the command to run, never skips one
let notReady: unknown;
beforeAll(async () => {
  interop = await startInterop().catch((error: unknown) => {
    notReady = error;
    return undefined as unknown as Interop;
  });
});
beforeEach(() => {
  if (notReady !== undefined) throw notReady;
});
afterAll(async () => {
  await interop?.stop();
});

const other = (b: Binary): Binary => (b === "ipamkit" ? "whereabouts" : "ipamkit");

async function add(binary: Binary, a: Attachment, conf: Record<string, unknown>): Promise<string> {
  const r = await cni(interop, binary, "ADD", a, conf);
  if (r.ip === undefined) throw new Error(`ADD failed: ${failures([r]).join("") || JSON.stringify(r.run.json)}`);
  return r.ip;
}

describe("ipamkit beside Whereabouts v0.9.2 on Whereabouts' CRDs", () => {
  it("alternating ADDs: each binary sees the other's reservations; a repeat ADD by the other binary returns the same address", async () => {
    const range = "10.81.1.0/24";
    const conf = interopConf(interop, range);
    const live = new Map<Attachment, string>();
    const order: Binary[] = ["ipamkit", "whereabouts", "ipamkit", "whereabouts", "whereabouts", "ipamkit"];
    for (const [i, binary] of order.entries()) {
      const a = attachment(`alt-${binary}-${i}`);
      const ip = await add(binary, a, conf);
      expect([...live.values()], `${binary} ADD ${a.id} got ${ip}, already held`).not.toContain(ip);
      live.set(a, ip);
    }
    for (const [i, binary] of order.entries()) {
      const a = [...live.keys()][i] as Attachment;
      // the same attachment (container, interface, pod) added again, by the binary that did not add it
      expect(await add(other(binary), a, conf), `${other(binary)} repeat ADD of ${binary}'s ${a.id}`).toBe(live.get(a));
    }
    expect(problems(await readState(interop, range), { live })).toEqual([]);
  });

  it("cross DELs: ipamkit frees what Whereabouts added and Whereabouts what ipamkit added, entries and ORIPs", async () => {
    const range = "10.81.2.0/24";
    const conf = interopConf(interop, range);
    const byWhereabouts = [attachment("x-wb-1"), attachment("x-wb-2", "net2")];
    const byIpamkit = [attachment("x-ik-1"), attachment("x-ik-2", "net2")];
    const live = new Map<Attachment, string>();
    for (const a of byWhereabouts) live.set(a, await add("whereabouts", a, conf));
    for (const a of byIpamkit) live.set(a, await add("ipamkit", a, conf));
    expect(problems(await readState(interop, range), { live })).toEqual([]);
    const dels = [
      ...(await Promise.all(byWhereabouts.map((a) => cni(interop, "ipamkit", "DEL", a, conf)))),
      ...(await Promise.all(byIpamkit.map((a) => cni(interop, "whereabouts", "DEL", a, conf)))),
    ];
    expect(failures(dels)).toEqual([]);
    const after = await readState(interop, range);
    expect(after.entries).toEqual([]);
    expect(after.orips).toEqual([]);
    // and the freed addresses are handed out again, by either binary
    const again = [await add("whereabouts", attachment("x-wb-3"), conf), await add("ipamkit", attachment("x-ik-3"), conf)];
    expect(again.every((ip) => [...live.values()].includes(ip))).toBe(true);
  });

  // ipamkit writes its ORIP before its pool entry; Whereabouts, holding its Lease `whereabouts`,
  // checks the ORIP, patches the pool, then creates the ORIP and fails the ADD when it already
  // exists. With `whereabouts_lease: false`, an ipamkit ORIP landing in that window (ipamkit then loses
  // the pool write and deletes it) fails 1-3 of 10 Whereabouts ADDs a round: asserted here, every
  // ipamkit ADD succeeds, a Whereabouts ADD fails only that way, no address twice, nothing left.
  it("10 ipamkit + 10 Whereabouts ADDs at once, 3 rounds, whereabouts_lease: false: no duplicates, ipamkit never fails, Whereabouts only on the ORIP create; every DEL leaves nothing", async () => {
    await mixedRounds("10.81.3.0/24", { whereabouts_lease: false }, "only-orip-create");
  }, 180_000);

  // The defaults: ipamkit sees Whereabouts write its Lease (the tests above ran it) and takes part
  // in that Lease by itself, so no Whereabouts ADD fails.
  it("10 ipamkit + 10 Whereabouts ADDs at once, 3 rounds, default settings: no duplicates and no failure of either binary; every DEL leaves nothing", async () => {
    const adds = await mixedRounds("10.81.7.0/24", {}, "none");
    expect(adds.filter((r) => r.binary === "whereabouts" && r.run.code === 0)).toHaveLength(30);
  }, 180_000);

  // With `whereabouts_lease: true` ipamkit holds that Lease around its claim and pool writes, so no
  // ipamkit ORIP can land inside Whereabouts' window: no Whereabouts ADD fails at all.
  it("10 ipamkit + 10 Whereabouts ADDs at once, 3 rounds, whereabouts_lease on: no duplicates and no failure of either binary; every DEL leaves nothing", async () => {
    const adds = await mixedRounds("10.81.5.0/24", { whereabouts_lease: true }, "none");
    expect(adds.filter((r) => r.binary === "whereabouts" && r.run.code === 0)).toHaveLength(30);
  }, 180_000);

  it("the same through ipamkit's node-local agent, whereabouts_lease on: no failure of either binary; every DEL leaves nothing", async () => {
    const agent = await startAgentProcess();
    // the agent's socket is the node's setting: its flat file (which Whereabouts reads too, ignoring these keys)
    const flat = readFileSync(interop.flatFile, "utf8");
    writeFileSync(interop.flatFile, JSON.stringify({ ...JSON.parse(flat), agent_socket: agent.socketPath, agent_required: true }));
    try {
      const adds = await mixedRounds("10.81.6.0/24", { whereabouts_lease: true }, "none");
      expect(adds.filter((r) => r.binary === "whereabouts" && r.run.code === 0)).toHaveLength(30);
      expect((await agentStats(agent.socketPath)).raw).toBeGreaterThanOrEqual(30);
    } finally {
      writeFileSync(interop.flatFile, flat);
      await agent.stop();
    }
  }, 180_000);

  it("20 ipamkit ADDs at once on a fresh range: every ORIP names its entry's attachment; after 20 DELs no ORIP remains", async () => {
    const range = "10.81.4.0/24";
    const conf = interopConf(interop, range);
    const adds = await Promise.all(Array.from({ length: 20 }, (_, i) => cni(interop, "ipamkit", "ADD", attachment(`burst-${i}`), conf)));
    expect(failures(adds)).toEqual([]);
    expect(duplicateAddresses(adds)).toEqual([]);
    const live = new Map(adds.map((r) => [r.attachment, r.ip ?? ""]));
    // soft: the DELs still run, so a failure also shows how many ORIPs they leave
    expect.soft(problems(await readState(interop, range), { live, requireContainerId: true })).toEqual([]);
    const dels = await Promise.all(adds.map((r) => cni(interop, "ipamkit", "DEL", r.attachment, conf)));
    expect(failures(dels)).toEqual([]);
    const after = await readState(interop, range);
    expect(after.orips.map((o) => `${o.address} ${o.containerid ?? "-"}/${o.ifname ?? "-"}`)).toEqual([]);
    expect(after.entries).toEqual([]);
    // Whereabouts then takes the lowest address, as on an empty pool: no leftover ORIP makes it skip any
    expect(await add("whereabouts", attachment("after-burst"), conf)).toBe("10.81.4.1");
  }, 120_000);
});

/**
 * 10 ipamkit + 10 Whereabouts ADDs at once on `range`, 3 rounds, then every DEL by the binary that
 * added it. `whereaboutsMayFail`: "none", or only with Whereabouts' ORIP create meeting an existing
 * ORIP. ipamkit never fails; no address twice; every ORIP names its entry; nothing left after.
 */
async function mixedRounds(
  range: string,
  extra: Record<string, unknown>,
  whereaboutsMayFail: "none" | "only-orip-create",
): Promise<CallResult[]> {
  const conf = interopConf(interop, range, extra);
  const live = new Map<Attachment, string>();
  const adds: CallResult[] = [];
  for (let round = 0; round < 3; round++) {
    const calls = Array.from({ length: 20 }, (_, i) => {
      const binary: Binary = i % 2 === 0 ? "ipamkit" : "whereabouts";
      return cni(interop, binary, "ADD", attachment(`mix-${range.split(".")[2]}-${round}-${binary}-${i}`), conf);
    });
    const results = await Promise.all(calls);
    adds.push(...results);
    // soft: every round and the DELs still run, so a failure shows what each round did
    expect.soft(failures(results.filter((r) => r.binary === "ipamkit")), `round ${round}`).toEqual([]);
    const whereaboutsFailed = results.filter((r) => r.binary === "whereabouts" && r.run.code !== 0);
    if (whereaboutsMayFail === "none") expect.soft(failures(whereaboutsFailed), `round ${round}`).toEqual([]);
    for (const r of whereaboutsFailed)
      expect.soft(r.run.stdout, `round ${round}`).toMatch(/overlappingrangeipreservations.* already exists/);
    for (const r of results) if (r.ip !== undefined) live.set(r.attachment, r.ip);
    expect.soft(duplicateAddresses(adds), `round ${round}`).toEqual([]);
    // A failed Whereabouts ADD leaves its pool entry until the runtime's DEL below, with or without
    // an ORIP (ipamkit's, rewritten to name that entry, when ipamkit then lost the pool write).
    const pending = new Set(adds.filter((r) => r.binary === "whereabouts" && r.run.code !== 0).map((r) => r.attachment.id));
    const state = await readState(interop, range);
    const pendingOrip = (o: (typeof state.orips)[number]) =>
      [...pending].some((id) => o.containerid === id || o.podref?.endsWith(`/pod-${id}`));
    const settled = {
      ...state,
      entries: state.entries.filter((e) => !pending.has(e.id)),
      orips: state.orips.filter((o) => !pendingOrip(o)),
    };
    expect.soft(problems(settled, { live }), `round ${round}`).toEqual([]);
  }
  // every attachment is deleted by the binary that added it, failed ADDs too (as a runtime does)
  const dels = await Promise.all(adds.map((r) => cni(interop, r.binary, "DEL", r.attachment, conf)));
  expect(failures(dels)).toEqual([]);
  const after = await readState(interop, range);
  expect(after.entries).toEqual([]);
  expect(after.orips).toEqual([]);
  return adds;
}
