import { describe, expect, it } from "vitest";
import { allocate, release, releaseIf } from "./allocator.js";
import { AddressUnavailableError, PoolCorruptError } from "./errors.js";
import { formatIp, ipAt } from "./ip.js";
import { createIpam } from "./ipam.js";
import { attachmentKey, formatKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { Pool } from "./pool.js";
import { parseRange } from "./range.js";
import type { Reservation } from "./reservation.js";

// Legacy entries: Whereabouts < 0.8 writes no ifname, and writes two entries with the same id when
// a pod has two interfaces on one network (or a repeated ADD got a second address). DESIGN.md,
// "Legacy entries".

const range = parseRange({ range: "10.0.0.0/24" });
const exact = (id: string, ifName = "net1") => attachmentKey({ containerId: id, ifName });
const legacyKey = (id: string) => attachmentKey({ containerId: id, ifName: "" }, { allowLegacy: true });
const legacy = (offset: bigint, id: string, podRef = "ns/old"): Reservation => ({ offset, key: legacyKey(id), podRef });
const ip = (offset: bigint) => formatIp(ipAt(range.cidr, offset));
const shape = (pool: Pool) => pool.reservations().map((r) => `${r.offset}=${formatKey(r.key)}`);

describe("Pool with legacy entries", () => {
  it("holds several legacy entries of one container: a legal state, indexed in offset order", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(7n, "c"), legacy(3n, "c"), legacy(5n, "d"), legacy(9n, "c")], { name: "p" });
    expect(pool.legacyOf("c").map((r) => r.offset)).toEqual([3n, 7n, 9n]);
    expect(pool.forKey(exact("c"))?.offset).toBe(3n);
    expect(pool.forKey(legacyKey("c"))?.offset).toBe(3n);
    expect(pool.exactly(exact("c"))).toBeUndefined();
    const less = pool.withoutAt(3n);
    expect(less.legacyOf("c").map((r) => r.offset)).toEqual([7n, 9n]);
    expect(pool.legacyOf("c")).toHaveLength(3); // unchanged
    expect(less.withoutAt(7n).withoutAt(9n).legacyOf("c")).toEqual([]);
    expect(
      less
        .with(legacy(1n, "c"))
        .legacyOf("c")
        .map((r) => r.offset),
    ).toEqual([1n, 7n, 9n]);
  });

  it("still refuses the same address twice, naming the pool, and an exact key at two addresses", () => {
    expect(() => Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(4n, "c")], { name: "ns/10.0.0.0-24" })).toThrow(
      /pool ns\/10.0.0.0-24 is corrupt: two reservations at 10.0.0.4/,
    );
    expect(() =>
      Pool.fromReservations(range.cidr, [
        { offset: 4n, key: exact("c") },
        { offset: 5n, key: exact("c") },
      ]),
    ).toThrow(PoolCorruptError);
    // an exact entry and legacy entries of one container live side by side
    const mixed = Pool.fromReservations(range.cidr, [{ offset: 4n, key: exact("c") }, legacy(5n, "c")]);
    expect(mixed.forKey(exact("c"))?.offset).toBe(4n);
    expect(mixed.forKey(exact("c", "net2"))?.offset).toBe(5n);
  });
});

describe("allocate and release over legacy entries", () => {
  it("one legacy entry: ADD adopts it (same address, ifname recorded), a repeat ADD writes nothing", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(5n, "c")]);
    const a = allocate(pool, range, { key: exact("c"), podRef: "ns/new", podUid: "u1", now: "2026-12-07T00:00:00.000Z" });
    expect(ip(a.reservation.offset)).toBe("10.0.0.5");
    expect(a.reused).toBe(true);
    expect(a.adopted?.key).toEqual(legacyKey("c"));
    expect(shape(a.pool)).toEqual(["5=c/net1"]);
    expect(a.reservation).toMatchObject({ podRef: "ns/new", podUid: "u1", createdAt: "2026-12-07T00:00:00.000Z" });
    const again = allocate(a.pool, range, { key: exact("c") });
    expect([again.reused, again.adopted, again.pool]).toEqual([true, undefined, a.pool]);
  });

  it("several legacy entries: each interface's ADD adopts a distinct one, lowest first; then new addresses", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(9n, "c"), legacy(4n, "c"), legacy(6n, "other")]);
    const a = allocate(pool, range, { key: exact("c", "net1") });
    const b = allocate(a.pool, range, { key: exact("c", "net2") });
    const c = allocate(b.pool, range, { key: exact("c", "net3") });
    expect([a.reservation.offset, b.reservation.offset, c.reservation.offset]).toEqual([4n, 9n, 1n]);
    expect([a.adopted?.offset, b.adopted?.offset, c.adopted]).toEqual([4n, 9n, undefined]);
    expect(shape(c.pool)).toEqual(["1=c/net3", "4=c/net1", "6=other/", "9=c/net2"]);
  });

  it("a requested address adopts the legacy entry there; one elsewhere is refused, never a second address", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(9n, "c")]);
    expect(allocate(pool, range, { key: exact("c"), address: "10.0.0.9" }).reservation.offset).toBe(9n);
    expect(() => allocate(pool, range, { key: exact("c"), address: "10.0.0.20" })).toThrow(AddressUnavailableError);
  });

  it("DEL without an exact entry frees the container's lowest legacy entry; an exact entry goes first", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(9n, "c"), { offset: 12n, key: exact("c", "net1") }]);
    const first = release(pool, exact("c", "net1"));
    expect(first.released?.offset).toBe(12n);
    const second = release(first.pool, exact("c", "net1"));
    expect(second.released?.offset).toBe(4n);
    const third = release(second.pool, exact("c", "net7"));
    expect(third.released?.offset).toBe(9n);
    expect(release(third.pool, exact("c")).released).toBeUndefined();
    // another container's DEL never frees them
    expect(release(pool, exact("d")).released).toBeUndefined();
  });

  it("releaseIf frees exactly the legacy entry observed, not its container's lowest", () => {
    const pool = Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(9n, "c")]);
    const r = releaseIf(pool, pool.atOffset(9n) as Reservation);
    expect(r.outcome).toBe("released");
    expect(shape(r.pool)).toEqual(["4=c/"]);
    expect(releaseIf(r.pool, pool.atOffset(9n) as Reservation).outcome).toBe("changed"); // c/ still holds 10.0.0.4
    expect(releaseIf(r.pool.withoutAt(4n), pool.atOffset(9n) as Reservation).outcome).toBe("absent");
  });
});

const variants: [string, MemoryStoreOptions][] = [
  ["plain", {}],
  ["atomic commits", { transactions: true }],
  ["entry-level writes", { transactions: true, entryWrites: true }],
];

for (const [name, options] of variants) {
  describe(`Ipam over legacy entries (memory store, ${name})`, () => {
    const ref = { network: "", cidr: range.cidr.text };
    async function seeded() {
      const store = createMemoryStore(options);
      await store.writePool(ref, Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(9n, "c")]), undefined);
      return { store, ipam: createIpam({ store }) };
    }

    it("ADD adopts and writes the exact key; CHECK (lookup) and DEL agree with it", async () => {
      const { store, ipam } = await seeded();
      expect((await ipam.lookup({ ranges: [range], key: exact("c", "eth0") }))[0]?.reservation.offset).toBe(4n);
      const [a] = await ipam.allocate({ ranges: [range], key: exact("c", "eth0"), podRef: "ns/p" });
      expect(a && formatIp(a.address)).toBe("10.0.0.4");
      expect(shape((await store.readPool(ref))?.pool as Pool)).toEqual(["4=c/eth0", "9=c/"]);
      const [b] = await ipam.allocate({ ranges: [range], key: exact("c", "net1"), podRef: "ns/p" });
      expect(b && formatIp(b.address)).toBe("10.0.0.9");
      expect((await ipam.lookup({ ranges: [range], key: exact("c", "net1") }))[0]?.reservation.offset).toBe(9n);
      expect((await ipam.release({ ranges: [range], key: exact("c", "net1") })).map((r) => formatIp(r.address))).toEqual(["10.0.0.9"]);
      expect((await ipam.release({ ranges: [range], key: exact("c", "eth0") })).map((r) => formatIp(r.address))).toEqual(["10.0.0.4"]);
      expect((await store.readPool(ref))?.pool.size).toBe(0);
    });

    it("DEL with no exact entry frees one legacy entry per call; a re-ADD then adopts the other", async () => {
      const { store, ipam } = await seeded();
      expect((await ipam.release({ ranges: [range], key: exact("c", "eth0") })).map((r) => formatIp(r.address))).toEqual(["10.0.0.4"]);
      const [a] = await ipam.allocate({ ranges: [range], key: exact("c", "eth0") });
      expect(a && formatIp(a.address)).toBe("10.0.0.9");
      expect(shape((await store.readPool(ref))?.pool as Pool)).toEqual(["9=c/eth0"]);
    });

    it("the reconciler's conditional release frees a legacy entry that is not its container's lowest", async () => {
      const { store, ipam } = await seeded();
      const nine = (await store.readPool(ref))?.pool.atOffset(9n) as Reservation;
      expect(await ipam.releaseAllIf(ref, [nine])).toEqual(["released"]);
      expect(shape((await store.readPool(ref))?.pool as Pool)).toEqual(["4=c/"]);
    });
  });
}
