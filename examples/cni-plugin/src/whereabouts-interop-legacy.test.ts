import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findWhereabouts } from "@ipamkit/kube-apiserver-launcher";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  attachment,
  cni,
  describeCall,
  GROUP,
  type Interop,
  interopConf,
  POOL_NAMESPACE,
  startInterop,
  VERSION,
} from "../test/whereabouts.js";
import { preV08Crds, runReconciler, writeLegacyPool } from "../test/whereabouts-legacy.js";
import { addressAt, poolName, problems, readState } from "../test/whereabouts-state.js";

// A pool exactly as Whereabouts v0.6.x left it, on the CRDs of that time (no `ifname`: the API
// server prunes it from every write, ipamkit's included), taken over by ipamkit.

const RANGE = "10.82.1.0/24";
const at = (offset: number) => addressAt(RANGE, offset);
// pod-multi has two interfaces on the network: two entries under one container id, neither with ifname
const MULTI = { id: "legacy-multi", podref: "default/pod-legacy-multi" };
const ONE = { id: "legacy-one", podref: "default/pod-legacy-one" };

let interop: Interop;
let crdDir: string;
// A missing build (Whereabouts or kube-apiserver) fails every test with the command to run, never skips one
let notReady: unknown;
beforeAll(async () => {
  crdDir = mkdtempSync(join(tmpdir(), "ipamkit-wb-crds-"));
  try {
    interop = await startInterop({ crds: preV08Crds(findWhereabouts(), crdDir) });
    const fixture = [
      { offset: 1, ...MULTI },
      { offset: 2, ...MULTI },
      { offset: 3, ...ONE },
    ];
    await writeLegacyPool(interop, RANGE, fixture, at);
  } catch (error) {
    notReady = error;
  }
});
beforeEach(() => {
  if (notReady !== undefined) throw notReady;
});
afterAll(async () => {
  await interop?.stop();
  rmSync(crdDir, { recursive: true, force: true });
});

const conf = () => interopConf(interop, RANGE);
const ids = async () => (await readState(interop, RANGE)).entries.map((e) => `${e.address} ${e.id}`).sort();
const noCorrupt = (text: string) => expect(text).not.toMatch(/corrupt/i);

describe("a pool Whereabouts v0.6.x wrote, on a CRD without ifname", () => {
  it("the fixture is what v0.6 left, and this CRD prunes ifname from whatever writes it", async () => {
    const state = await readState(interop, RANGE);
    expect(state.entries.map((e) => e.ifname)).toEqual([undefined, undefined, undefined]);
    expect(problems(state)).toEqual([]);
    const probe = "10.82.9.0/24";
    await writeLegacyPool(interop, probe, [], at);
    const base = { group: GROUP, version: VERSION, namespace: POOL_NAMESPACE, plural: "ippools", name: poolName(probe) };
    const pool = (await interop.custom.getNamespacedCustomObject(base)) as { spec: { allocations: Record<string, unknown> } };
    pool.spec.allocations["1"] = { id: "probe", podref: "default/probe", ifname: "net1" };
    await interop.custom.replaceNamespacedCustomObject({ ...base, body: pool });
    expect((await readState(interop, probe)).entries).toEqual([{ address: "10.82.9.1", id: "probe", podref: "default/probe" }]);
  });

  it("ipamkit ADD of a new attachment works there and takes a free address; its repeated ADDs never get a second one", async () => {
    const pod = [attachment("new-a", "net1", "pod-new"), attachment("new-a", "net2", "pod-new")];
    const first = await Promise.all(pod.map((a) => cni(interop, "ipamkit", "ADD", a, conf())));
    for (const r of first) noCorrupt(r.run.stdout);
    expect(
      first.map((r) => r.run.code),
      first.map(describeCall).join("\n"),
    ).toEqual([0, 0]);
    const addresses = first.map((r) => r.ip ?? "");
    expect(new Set([at(1), at(2), at(3), ...addresses]).size).toBe(5);
    for (let round = 0; round < 2; round++) {
      const again = await Promise.all(pod.map((a) => cni(interop, "ipamkit", "ADD", a, conf())));
      expect(
        again.map((r) => r.ip),
        again.map(describeCall).join("\n"),
      ).toEqual(addresses);
    }
    expect((await ids()).filter((e) => e.endsWith(" new-a"))).toEqual(addresses.map((ip) => `${ip} new-a`).sort());
    expect(problems(await readState(interop, RANGE))).toEqual([]);
    // DEL of one interface frees exactly its address
    const del = await cni(interop, "ipamkit", "DEL", pod[0] ?? attachment("x"), conf());
    expect(del.run.code, describeCall(del)).toBe(0);
    expect((await ids()).filter((e) => e.endsWith(" new-a"))).toEqual([`${addresses[1]} new-a`]);
  });

  it("a re-ADD of a container with exactly one legacy entry returns that address, no second one", async () => {
    const a = attachment(ONE.id, "net1", "pod-legacy-one");
    const r = await cni(interop, "ipamkit", "ADD", a, conf());
    noCorrupt(r.run.stdout);
    expect(r.ip, describeCall(r)).toBe(at(3));
    expect((await ids()).filter((e) => e.endsWith(` ${ONE.id}`))).toEqual([`${at(3)} ${ONE.id}`]);
    expect(problems(await readState(interop, RANGE))).toEqual([]);
  });

  it("a DEL of a legacy attachment frees one of its container's entries, and its ORIP; the next DEL the other", async () => {
    const first = await cni(interop, "ipamkit", "DEL", attachment(MULTI.id, "net1", "pod-legacy-multi"), conf());
    noCorrupt(first.run.stdout);
    expect(first.run.code, describeCall(first)).toBe(0);
    const left = (await ids()).filter((e) => e.endsWith(` ${MULTI.id}`));
    expect(left).toHaveLength(1);
    expect(problems(await readState(interop, RANGE))).toEqual([]);
    const second = await cni(interop, "ipamkit", "DEL", attachment(MULTI.id, "net2", "pod-legacy-multi"), conf());
    expect(second.run.code, describeCall(second)).toBe(0);
    const state = await readState(interop, RANGE);
    expect(state.entries.filter((e) => e.id === MULTI.id)).toEqual([]);
    expect(state.orips.map((o) => o.address)).not.toContain(at(1));
    expect(state.orips.map((o) => o.address)).not.toContain(at(2));
    expect(problems(state)).toEqual([]);
  });

  it("ipamkit's reconciler reads the pool: a dry run and a pass report no corrupt pool and leave no ORIP without its entry", async () => {
    // a second container with two legacy entries, beside what the tests above left
    const taken = new Set((await readState(interop, RANGE)).entries.map((e) => e.address));
    const twice = { id: "legacy-twice", podref: "default/pod-legacy-twice" };
    const offsets = [10, 11].filter((o) => !taken.has(at(o)));
    await writeLegacyPool(
      interop,
      RANGE,
      offsets.map((offset) => ({ offset, ...twice })),
      at,
    );
    expect(problems(await readState(interop, RANGE))).toEqual([]);
    const dry = await runReconciler(interop, ["--dry-run"]);
    noCorrupt(dry.output);
    expect(dry.code, dry.output).toBe(0);
    const pass = await runReconciler(interop);
    noCorrupt(pass.output);
    expect(pass.code, pass.output).toBe(0);
    // no pod exists: every reservation is an orphan, and the pass frees them with their ORIPs
    const state = await readState(interop, RANGE);
    expect(state.entries).toEqual([]);
    expect(state.orips).toEqual([]);
  });
});
