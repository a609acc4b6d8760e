import { type Claim, createIpam, formatIp, ipAt, Pool, parseCidr, parseRange } from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

const wide = parseRange({ range: "10.40.0.0/24" });
const narrow = parseRange({ range: "10.40.0.0/26" });
const text = (a: { address: { family: 4 | 6; value: bigint } } | undefined) => (a === undefined ? "none" : formatIp(a.address));

export function registerOverlapCases(ctx: SuiteContext): void {
  registerOverlapProtectionCases(ctx);
  registerReleaseAllIfCases(ctx);
  registerClaimRecoveryCases(ctx);
}

/** Overlap protection: one network's overlapping pools share claims; off, or across networks, they are independent. */
function registerOverlapProtectionCases(ctx: SuiteContext): void {
  it("overlapping pools of one network never hand out the same IP (protection on)", async () => {
    const i = createIpam({ store: ctx.store() });
    const seen = new Set<string>();
    for (let n = 0; n < 12; n++) {
      const [a] = await i.allocate({ ranges: [n % 2 === 0 ? wide : narrow], key: key(`c${n}`) });
      seen.add(text(a));
    }
    expect(seen.size).toBe(12);
  });

  it("with protection off, overlapping pools are independent", async () => {
    const i = createIpam({ store: ctx.store(), overlappingRanges: false });
    const [a] = await i.allocate({ ranges: [wide], key: key("a") });
    const [b] = await i.allocate({ ranges: [narrow], key: key("b") });
    expect(text(a)).toBe("10.40.0.1");
    expect(text(b)).toBe("10.40.0.1");
  });

  it("different network names are independent even with protection on", async () => {
    const i = createIpam({ store: ctx.store() });
    const [a] = await i.allocate({ network: "red", ranges: [wide], key: key("a") });
    const [b] = await i.allocate({ network: "green", ranges: [narrow], key: key("b") });
    expect([text(a), text(b)]).toEqual(["10.40.0.1", "10.40.0.1"]);
  });

  it("a released address is claimable by the overlapping pool again", async () => {
    const i = createIpam({ store: ctx.store() });
    await i.allocate({ ranges: [wide], key: key("a") });
    await i.release({ ranges: [wide], key: key("a") });
    const [b] = await i.allocate({ ranges: [narrow], key: key("b") });
    expect(text(b)).toBe("10.40.0.1");
    expect((await ctx.store().listClaims("")).map((c) => c.address)).toEqual(["10.40.0.1"]);
  });
}

/** releaseAllIf: one pool's unchanged reservations freed with their claims, in bounded chunks. */
function registerReleaseAllIfCases(ctx: SuiteContext): void {
  it("releaseAllIf frees the unchanged reservations of one pool in one write, with their claims only", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    const ref = { network: "", cidr: wide.cidr.text };
    for (const c of ["a", "b", "c"]) await i.allocate({ ranges: [wide], key: key(c), podUid: `${c}-1` });
    const observed = ((await s.readPool(ref))?.pool.reservations() ?? []).slice();
    // b is re-created (same key, new owner) after it was observed; c is released meanwhile
    await i.release({ ranges: [wide], key: key("b") });
    await i.allocate({ ranges: [wide], key: key("b"), podUid: "b-2" });
    await i.release({ ranges: [wide], key: key("c") });
    expect(await i.releaseAllIf(ref, observed)).toEqual(["released", "changed", "absent"]);
    const left = (await s.readPool(ref))?.pool.reservations() ?? [];
    expect(left.map((r) => `${r.key.containerId}:${r.podUid}`)).toEqual(["b:b-2"]);
    const bAddress = formatIp(ipAt(wide.cidr, left[0]?.offset ?? 0n));
    expect((await s.listClaims("")).map((c) => c.address)).toEqual([bAddress]);
    expect(await i.releaseAllIf(ref, [])).toEqual([]);
  });

  it("releaseAllIf takes any number of reservations (written in bounded chunks: etcd caps a transaction at 128 operations)", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    const ref = { network: "", cidr: wide.cidr.text };
    for (let n = 0; n < 45; n++) await i.allocate({ ranges: [wide], key: key(`m${n}`), podUid: `u${n}` });
    const observed = (await s.readPool(ref))?.pool.reservations() ?? [];
    expect(observed).toHaveLength(45);
    const outcomes = await i.releaseAllIf(ref, observed);
    expect(outcomes).toEqual(observed.map(() => "released"));
    expect((await s.readPool(ref))?.pool.size).toBe(0);
    expect(await s.listClaims("")).toEqual([]);
  });
}

/** Claims after crashes and under races: a dangling claim never blocks, a live one is respected, no IP shared. */
function registerClaimRecoveryCases(ctx: SuiteContext): void {
  it("crash after claiming, before the pool write: the dangling claim is taken over, never doubly held", async () => {
    const s = ctx.store();
    const claim: Claim = { pool: { network: "", cidr: wide.cidr.text }, key: key("crashed") };
    await s.writeClaim({ network: "", address: "10.40.0.1" }, claim, undefined);
    const i = createIpam({ store: s });
    const [b] = await i.allocate({ ranges: [narrow], key: key("b") });
    expect(text(b)).toBe("10.40.0.1");
    expect((await s.readClaim({ network: "", address: "10.40.0.1" }))?.claim.pool.cidr).toBe(narrow.cidr.text);
    const [c] = await i.allocate({ ranges: [wide], key: key("c") });
    expect(text(c)).toBe("10.40.0.2");
  });

  it("crash after the pool release, before the claim delete: the address is reused, never blocked", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    await i.allocate({ ranges: [wide], key: key("a") });
    // simulate the crash: drop the reservation from the pool but leave the claim
    const ref = { network: "", cidr: wide.cidr.text };
    const stored = await s.readPool(ref);
    if (stored === undefined) throw new Error("pool missing");
    await s.writePool(ref, stored.pool.without(key("a")), stored.version);
    const [b] = await i.allocate({ ranges: [narrow], key: key("b") });
    expect(text(b)).toBe("10.40.0.1");
  });

  it("a live claim is respected even when it names another key of the holding pool", async () => {
    const s = ctx.store();
    const ref = { network: "", cidr: wide.cidr.text };
    await s.writePool(ref, Pool.fromReservations(parseCidr(wide.cidr.text), [{ offset: 1n, key: key("holder") }]), undefined);
    await s.writeClaim({ network: "", address: "10.40.0.1" }, { pool: ref, key: key("someone-else") }, undefined);
    const [b] = await createIpam({ store: s }).allocate({ ranges: [narrow], key: key("b") });
    expect(text(b)).toBe("10.40.0.2");
  });

  it("concurrent allocators on two overlapping pools never share an IP", async () => {
    const s = ctx.store();
    // Same retry budget as the 32×20 case: under CPU load 16 contenders for one address can exceed core's default 64 attempts.
    const i = createIpam({ store: s, retry: { attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 20 } });
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, n) => i.allocate({ ranges: [n % 2 === 0 ? wide : narrow], key: key(`w${n}`) })),
    );
    const addresses = results.map(([a]) => text(a));
    expect(new Set(addresses).size).toBe(16);
    const wideHeld = (await s.readPool({ network: "", cidr: wide.cidr.text }))?.pool.reservations().map((r) => r.offset) ?? [];
    const narrowHeld = (await s.readPool({ network: "", cidr: narrow.cidr.text }))?.pool.reservations().map((r) => r.offset) ?? [];
    expect(wideHeld.filter((o) => narrowHeld.includes(o))).toEqual([]);
    expect(wideHeld.length + narrowHeld.length).toBe(16);
  });
}
