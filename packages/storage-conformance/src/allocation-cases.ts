import { createIpam, formatIp, parseRange, RangeExhaustedError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

const v4 = parseRange({ range: "10.20.0.0/24", gateway: "10.20.0.1" });
const v6 = parseRange({ range: "2001:db8:20::/64" });
const tiny = parseRange({ range: "10.30.0.0/30" });

const storeIpam = (ctx: SuiteContext) => createIpam({ store: ctx.store() });

export function registerAllocationCases(ctx: SuiteContext): void {
  registerExactKeyCases(ctx);
  registerMultiRangeCases(ctx);
  registerReleaseIfCases(ctx);
}

/** One reservation per (containerID, ifName); release only by that exact key. */
function registerExactKeyCases(ctx: SuiteContext): void {
  const ipam = () => storeIpam(ctx);

  it("allocates idempotently per (containerID, ifName)", async () => {
    const i = ipam();
    const a = await i.allocate({ ranges: [v4], key: key("c1") });
    const again = await i.allocate({ ranges: [v4], key: key("c1") });
    const net1 = await i.allocate({ ranges: [v4], key: key("c1", "net1") });
    expect(formatIp(a[0]?.address ?? { family: 4, value: 0n })).toBe("10.20.0.2");
    expect(again[0]?.reused).toBe(true);
    expect(again[0]?.address).toEqual(a[0]?.address);
    expect(net1[0]?.address).not.toEqual(a[0]?.address);
  });

  it("releases by exact key only", async () => {
    const i = ipam();
    await i.allocate({ ranges: [v4], key: key("c1", "eth0") });
    await i.allocate({ ranges: [v4], key: key("c1", "net1") });
    await i.allocate({ ranges: [v4], key: key("c2", "eth0") });
    const released = await i.release({ ranges: [v4], key: key("c1", "net1") });
    expect(released.map((r) => formatIp(r.address))).toEqual(["10.20.0.3"]);
    const pool = (await ctx.store().readPool({ network: "", cidr: v4.cidr.text }))?.pool;
    expect(pool?.reservations().map((r) => `${r.key.containerId}/${r.key.ifName}`)).toEqual(["c1/eth0", "c2/eth0"]);
  });

  it("release is idempotent and a key holding nothing releases nothing without error", async () => {
    const i = ipam();
    await i.allocate({ ranges: [v4, v6], key: key("c1") });
    expect(await i.release({ ranges: [v4, v6], key: key("c1") })).toHaveLength(2);
    expect(await i.release({ ranges: [v4, v6], key: key("c1") })).toEqual([]);
    expect(await i.release({ ranges: [tiny], key: key("never") })).toEqual([]);
  });

  for (const liveFirst of [false, true]) {
    it(`seed scenario: releasing a powered-off node's stale key keeps the reborn pod's live IP (live written ${liveFirst ? "first" : "second"})`, async () => {
      const i = ipam();
      const stale = key("stale-sandbox");
      const live = key("live-sandbox");
      const order = liveFirst ? [live, stale] : [stale, live];
      const got = new Map<string, string>();
      for (const k of order) {
        const [a] = await i.allocate({ ranges: [v4], key: k, podRef: "ns/sts-0", podUid: k === live ? "uid-new" : "uid-old" });
        got.set(k.containerId, formatIp(a?.address ?? { family: 4, value: 0n }));
      }
      const released = await i.release({ ranges: [v4], key: stale });
      expect(released.map((r) => formatIp(r.address))).toEqual([got.get("stale-sandbox")]);
      const [still] = await i.lookup({ ranges: [v4], key: live });
      expect(still && formatIp(still.address)).toBe(got.get("live-sandbox"));
      expect(still?.reservation.podUid).toBe("uid-new");
      const pool = (await ctx.store().readPool({ network: "", cidr: v4.cidr.text }))?.pool;
      expect(pool?.size).toBe(1);
    });
  }
}

/** A multi-range ADD is all-or-nothing and never takes back what the key already held. */
function registerMultiRangeCases(ctx: SuiteContext): void {
  const ipam = () => storeIpam(ctx);

  it("multi-range ADD is all-or-nothing: a full range rolls back the others", async () => {
    const i = ipam();
    await i.allocate({ ranges: [tiny], key: key("f1") });
    await i.allocate({ ranges: [tiny], key: key("f2") });
    await expect(i.allocate({ ranges: [v6, v4, tiny], key: key("x") })).rejects.toBeInstanceOf(RangeExhaustedError);
    const lookups = await i.lookup({ ranges: [v6, v4, tiny], key: key("x") });
    expect(lookups).toEqual([undefined, undefined, undefined]);
    const dual = await i.allocate({ ranges: [v4, v6], key: key("y") });
    expect(dual.map((d) => formatIp(d.address))).toEqual(["10.20.0.2", "2001:db8:20::1"]);
  });

  it("keeps an earlier allocation of the same key when a later multi-range ADD fails", async () => {
    const i = ipam();
    const [first] = await i.allocate({ ranges: [v4], key: key("k") });
    await i.allocate({ ranges: [tiny], key: key("f1") });
    await i.allocate({ ranges: [tiny], key: key("f2") });
    await expect(i.allocate({ ranges: [v4, tiny], key: key("k") })).rejects.toBeInstanceOf(RangeExhaustedError);
    const [still] = await i.lookup({ ranges: [v4], key: key("k") });
    expect(still?.address).toEqual(first?.address);
  });
}

/** Conditional release: only a reservation unchanged since it was observed. */
function registerReleaseIfCases(ctx: SuiteContext): void {
  const ipam = () => storeIpam(ctx);

  it("releaseIf frees only a reservation unchanged since it was observed", async () => {
    const i = ipam();
    const ref = { network: "", cidr: v4.cidr.text };
    const [a] = await i.allocate({ ranges: [v4], key: key("c1"), podUid: "u1" });
    const observed = a?.reservation;
    if (observed === undefined) throw new Error("no reservation");
    await i.release({ ranges: [v4], key: key("c1") });
    await i.allocate({ ranges: [v4], key: key("c1"), podUid: "u2" });
    expect(await i.releaseIf(ref, observed)).toBe("changed");
    expect((await i.lookup({ ranges: [v4], key: key("c1") }))[0]?.reservation.podUid).toBe("u2");
    const [current] = await i.lookup({ ranges: [v4], key: key("c1") });
    expect(await i.releaseIf(ref, current?.reservation ?? observed)).toBe("released");
    expect(await i.releaseIf(ref, observed)).toBe("absent");
  });
}
