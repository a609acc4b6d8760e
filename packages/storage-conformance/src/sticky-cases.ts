import {
  type AttachmentKey,
  createIpam,
  formatIp,
  formatKey,
  type Ipam,
  ipAt,
  type PoolRef,
  parseRange,
  planReconcile,
  type Reservation,
} from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

// Sticky addresses (core DESIGN.md, "Sticky addresses"): a pod reborn under its namespace/name gets
// the address it had, whether its old sandbox was DELeted (the address was kept for it) or died
// with its node (the old key still holds it, for the old pod UID). The markers (`sticky`,
// `releasedAt`) live on the reservation, so every store must keep them.

const range = parseRange({ range: "10.43.0.0/24" });
const ref: PoolRef = { network: "", cidr: range.cidr.text };
const KEEP = 60;
const T0 = Date.parse("2026-03-01T10:00:00.000Z");

/** The helpers every sticky case uses, over one fake clock that `setup` resets for each test. */
function stickyHarness(ctx: SuiteContext) {
  let clock = T0;
  const tick = (ms: number) => {
    clock += ms;
  };
  const now = () => new Date(clock);
  const setup = (): Ipam => {
    clock = T0;
    return createIpam({ store: ctx.store(), now: () => new Date(clock) });
  };
  const add = async (ipam: Ipam, k: AttachmentKey, podUid: string | undefined, podRef = "db/db-0", sticky: number | null = KEEP) => {
    const [a] = await ipam.allocate({
      ranges: [range],
      key: k,
      podRef,
      ...(podUid === undefined ? {} : { podUid }),
      ...(sticky === null ? {} : { sticky }),
    });
    return formatIp((a as { address: Parameters<typeof formatIp>[0] }).address);
  };
  const del = async (ipam: Ipam, k: AttachmentKey, sticky = true) =>
    (await ipam.release({ ranges: [range], key: k, sticky })).map((r) => formatIp(r.address));
  const held = async () => (await ctx.store().readPool(ref))?.pool.reservations() ?? [];
  const at = async (offset: bigint): Promise<Reservation | undefined> => (await held()).find((r) => r.offset === offset);
  const claimKey = async (address: string) => {
    const c = await ctx.store().readClaim({ network: "", address });
    return c === undefined ? undefined : formatKey(c.claim.key);
  };
  /** One reconciler pass as the reconciler makes it: judge every reservation, release the orphans conditionally. */
  const reconcile = async (ipam: Ipam, pods: Record<string, { uid: string; phase: string }>) => {
    const reservations = (await held()).map((reservation) => ({
      pool: ref,
      address: formatIp(ipAt(range.cidr, reservation.offset)),
      reservation,
    }));
    const map = new Map(
      Object.entries(pods).map(([podRef, p]) => {
        const [namespace = "", name = ""] = podRef.split("/");
        return [podRef, { namespace, name, uid: p.uid, phase: p.phase, evictedByTaintManager: false }] as const;
      }),
    );
    const verdicts = planReconcile({ reservations, pods: map, now: new Date(clock), graceMs: 0 });
    const orphans = verdicts.filter((v) => v.release);
    if (orphans.length > 0)
      await ipam.releaseAllIf(
        ref,
        orphans.map((v) => v.observed.reservation),
      );
    return verdicts.map((v) => `${v.observed.address}:${v.reason}`);
  };
  return { tick, now, setup, add, del, held, at, claimKey, reconcile };
}
type StickyHarness = ReturnType<typeof stickyHarness>;

export function registerStickyCases(ctx: SuiteContext): void {
  const h = stickyHarness(ctx);
  registerRebindCases(ctx, h);
  registerKeepTimeCases(h);
  registerNoRebindCases(h);
}

/** A reborn pod (new UID) gets its address back, whether its old sandbox's DEL came or not. */
function registerRebindCases(ctx: SuiteContext, h: StickyHarness): void {
  const { tick, now, setup, add, del, held, at, claimKey } = h;

  it("(a) dead node, no DEL: the reborn pod (new UID) gets the same address; the old sandbox's DEL then releases nothing of it", async () => {
    const ipam = setup();
    expect(await add(ipam, key("old-sandbox"), "uid-1")).toBe("10.43.0.1");
    expect(await add(ipam, key("db1-sandbox"), "uid-9", "db/db-1")).toBe("10.43.0.2");
    tick(5_000);
    expect(await add(ipam, key("new-sandbox"), "uid-2")).toBe("10.43.0.1");
    const rebound = await at(1n);
    expect(rebound && formatKey(rebound.key)).toBe("new-sandbox/eth0");
    expect(rebound?.podUid).toBe("uid-2");
    expect(rebound?.releasedAt).toBeUndefined();
    expect(rebound?.sticky).toBe(KEEP);
    expect(await claimKey("10.43.0.1")).toBe("new-sandbox/eth0");
    // the old sandbox's DEL comes at last (its node is back): the exact-key rule, nothing released
    expect(await del(ipam, key("old-sandbox"))).toEqual([]);
    expect(await del(ipam, key("old-sandbox"), false)).toEqual([]);
    const after = await at(1n);
    expect(after && formatKey(after.key)).toBe("new-sandbox/eth0");
    expect(after?.releasedAt).toBeUndefined();
    expect(await claimKey("10.43.0.1")).toBe("new-sandbox/eth0");
    expect((await held()).length).toBe(2);
    // idempotent ADD of the reborn pod's key
    expect(await add(ipam, key("new-sandbox"), "uid-2")).toBe("10.43.0.1");
  });

  it("(b) DEL first: the address is kept for the pod; the reborn pod's ADD within the keep time gets it; a different pod never does", async () => {
    const ipam = setup();
    expect(await add(ipam, key("old-sandbox"), "uid-1")).toBe("10.43.0.1");
    tick(1_000);
    expect(await del(ipam, key("old-sandbox"))).toEqual([]);
    const kept = await at(1n);
    expect(kept?.releasedAt).toBe(now().toISOString());
    expect(await claimKey("10.43.0.1")).toBe("old-sandbox/eth0");
    // repeated DELs change nothing
    const before = await ctx.store().readPool(ref);
    tick(1_000);
    expect(await del(ipam, key("old-sandbox"))).toEqual([]);
    expect((await ctx.store().readPool(ref))?.version).toBe(before?.version);
    // another pod (even the same name in another namespace) gets another address
    expect(await add(ipam, key("other"), "uid-5", "db/db-1")).toBe("10.43.0.2");
    expect(await add(ipam, key("else"), "uid-6", "other/db-0")).toBe("10.43.0.3");
    // CHECK of the DELeted key: it holds nothing any more
    expect(await ipam.lookup({ ranges: [range], key: key("old-sandbox") })).toEqual([undefined]);
    tick((KEEP - 10) * 1000);
    expect(await add(ipam, key("new-sandbox"), "uid-2")).toBe("10.43.0.1");
    const rebound = await at(1n);
    expect(rebound && formatKey(rebound.key)).toBe("new-sandbox/eth0");
    expect(rebound?.releasedAt).toBeUndefined();
    expect(rebound?.podUid).toBe("uid-2");
    expect(await claimKey("10.43.0.1")).toBe("new-sandbox/eth0");
  });
}

/** A kept address lasts its keep time: freed by the reconciler after, never before. */
function registerKeepTimeCases(h: StickyHarness): void {
  const { tick, now, setup, add, del, held, at, claimKey, reconcile } = h;

  it("a kept address is freed once its keep time has run out (reconciler: sticky-expired), not before", async () => {
    const ipam = setup();
    await add(ipam, key("old-sandbox"), "uid-1");
    await del(ipam, key("old-sandbox"));
    tick((KEEP - 1) * 1000);
    expect(await reconcile(ipam, {})).toEqual(["10.43.0.1:sticky-kept"]);
    expect((await held()).length).toBe(1);
    tick(1000);
    expect(await reconcile(ipam, {})).toEqual(["10.43.0.1:sticky-expired"]);
    expect(await held()).toEqual([]);
    expect(await claimKey("10.43.0.1")).toBeUndefined();
    // free again: the next pod gets it
    expect(await add(ipam, key("x"), "uid-7", "db/db-3")).toBe("10.43.0.1");
  });

  it("the reconciler never frees a reborn pod's sticky address at once: it keeps it for the pod, whose ADD takes it back", async () => {
    const ipam = setup();
    await add(ipam, key("old-sandbox"), "uid-1");
    tick(10_000);
    // the old pod is gone and db-0 is back with a new UID, its ADD not yet made
    expect(await reconcile(ipam, { "db/db-0": { uid: "uid-2", phase: "Pending" } })).toEqual(["10.43.0.1:pod-uid-changed"]);
    expect((await at(1n))?.releasedAt).toBe(now().toISOString());
    tick(5_000);
    expect(await add(ipam, key("new-sandbox"), "uid-2")).toBe("10.43.0.1");
    expect(await reconcile(ipam, { "db/db-0": { uid: "uid-2", phase: "Running" } })).toEqual(["10.43.0.1:no-network-status"]);
    // orphaned and never reborn: kept for the keep time since first seen orphaned, then freed
    tick(1_000);
    expect(await reconcile(ipam, {})).toEqual(["10.43.0.1:pod-missing"]);
    tick(KEEP * 1000);
    expect(await reconcile(ipam, {})).toEqual(["10.43.0.1:sticky-expired"]);
    expect(await held()).toEqual([]);
  });
}

/** What is never rebound: an unknown or identical UID, another interface, a non-sticky network. */
function registerNoRebindCases(h: StickyHarness): void {
  const { setup, add, del } = h;

  it("never rebinds a reservation whose pod UID is unknown, nor one of the same UID; sticky off gives a fresh address", async () => {
    const ipam = setup();
    expect(await add(ipam, key("legacy"), undefined)).toBe("10.43.0.1");
    expect(await add(ipam, key("reborn"), "uid-2")).toBe("10.43.0.2");
    // the same pod (same UID), a second sandbox while the first is not yet DELeted: its own address
    expect(await add(ipam, key("again"), "uid-2")).toBe("10.43.0.3");
    // another interface of the pod never takes eth0's kept address
    await del(ipam, key("reborn"));
    expect(await add(ipam, key("reborn-2", "net1"), "uid-3")).toBe("10.43.0.4");
    // sticky off: today's behaviour, a DEL frees and a reborn pod gets whatever is free
    expect(await add(ipam, key("plain-1"), "uid-a", "db/plain", null)).toBe("10.43.0.5");
    expect(await add(ipam, key("plain-2"), "uid-b", "db/plain", null)).toBe("10.43.0.6");
    expect(await del(ipam, key("plain-1"), false)).toEqual(["10.43.0.5"]);
    // a network turned non-sticky frees a kept address at DEL
    expect(await del(ipam, key("reborn"), false)).toEqual(["10.43.0.2"]);
  });
}
