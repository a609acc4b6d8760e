import { describe, expect, it } from "vitest";
import { allocate, allocateAll, findFree, release, releaseIf } from "./allocator.js";
import { AddressUnavailableError, InvalidRequestError, RangeExhaustedError } from "./errors.js";
import { formatIp, ipAt, parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { Pool } from "./pool.js";
import { parseRange } from "./range.js";
import type { Reservation } from "./reservation.js";

const key = (id: string, ifName = "eth0") => attachmentKey({ containerId: id, ifName });

function fill(pool: Pool, range: ReturnType<typeof parseRange>, n: number, prefix = "c") {
  let p = pool;
  for (let i = 0; i < n; i++) p = allocate(p, range, { key: key(`${prefix}${i}`) }).pool;
  return p;
}

describe("allocate", () => {
  const range = parseRange({ range: "10.0.0.0/24", gateway: "10.0.0.1", exclude: ["10.0.0.4/30"] });

  it("takes the lowest free address, skipping network, gateway and excludes", () => {
    let pool = Pool.empty(range.cidr);
    const got: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = allocate(pool, range, { key: key(`c${i}`) });
      pool = a.pool;
      got.push(formatIp(a.address));
    }
    expect(got).toEqual(["10.0.0.2", "10.0.0.3", "10.0.0.8", "10.0.0.9", "10.0.0.10"]);
  });

  it("is idempotent per key and does not mutate its input", () => {
    const first = allocate(Pool.empty(range.cidr), range, { key: key("a") });
    const again = allocate(first.pool, range, { key: key("a") });
    expect(again.reused).toBe(true);
    expect(again.address).toEqual(first.address);
    expect(again.pool).toBe(first.pool);
    const other = allocate(first.pool, range, { key: key("a", "net1") });
    expect(other.address).not.toEqual(first.address);
    expect(first.pool.size).toBe(1);
  });

  it("records owner metadata", () => {
    const a = allocate(Pool.empty(range.cidr), range, { key: key("a"), podRef: "ns/p", podUid: "u-1", now: "2026-01-01T00:00:00.000Z" });
    expect(a.reservation).toMatchObject({ podRef: "ns/p", podUid: "u-1", createdAt: "2026-01-01T00:00:00.000Z" });
  });

  it("reuses a freed address at once with lowest-free, not with round-robin", () => {
    const r = parseRange({ range: "10.0.0.0/29" });
    let pool = fill(Pool.empty(r.cidr), r, 3);
    pool = release(pool, key("c0")).pool;
    expect(formatIp(allocate(pool, r, { key: key("n") }).address)).toBe("10.0.0.1");
    const rr = allocate(pool, r, { key: key("n"), policy: "round-robin" });
    expect(formatIp(rr.address)).toBe("10.0.0.4");
    // the cursor wraps around once the end of the range is used
    let p = rr.pool;
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = allocate(p, r, { key: key(`w${i}`), policy: "round-robin" });
      p = a.pool;
      seen.push(formatIp(a.address));
    }
    expect(seen).toEqual(["10.0.0.5", "10.0.0.6", "10.0.0.1"]);
  });

  it("serves a static request, refusing a held, excluded or foreign address", () => {
    const a = allocate(Pool.empty(range.cidr), range, { key: key("a"), address: "10.0.0.77" });
    expect(formatIp(a.address)).toBe("10.0.0.77");
    expect(() => allocate(a.pool, range, { key: key("b"), address: "10.0.0.77" })).toThrow(AddressUnavailableError);
    expect(() => allocate(a.pool, range, { key: key("b"), address: "10.0.0.5" })).toThrow(AddressUnavailableError);
    expect(() => allocate(a.pool, range, { key: key("b"), address: "10.0.0.1" })).toThrow(AddressUnavailableError);
    expect(() => allocate(a.pool, range, { key: key("b"), address: "10.0.1.5" })).toThrow(AddressUnavailableError);
    expect(() => allocate(a.pool, range, { key: key("a"), address: "10.0.0.78" })).toThrow(AddressUnavailableError);
    // a static allocation does not move the round-robin cursor
    expect(a.pool.lastOffset).toBeUndefined();
  });

  it("reports exhaustion with a typed error", () => {
    const r = parseRange({ range: "10.0.0.0/29", exclude: ["10.0.0.6"] });
    const pool = fill(Pool.empty(r.cidr), r, 5);
    expect(() => allocate(pool, r, { key: key("x") })).toThrow(RangeExhaustedError);
    expect(() => allocate(pool, r, { key: key("x"), policy: "round-robin" })).toThrow(RangeExhaustedError);
  });

  it("never enumerates: a nearly full /8 and a /48 with a huge exclude answer at once", () => {
    const v4 = parseRange({ range: "10.0.0.0/8", exclude: ["10.0.0.0/9"] });
    const a = allocate(Pool.empty(v4.cidr), v4, { key: key("a") });
    expect(formatIp(a.address)).toBe("10.128.0.0");
    const v6 = parseRange({ range: "2001:db8::/48", exclude: ["2001:db8::/49"] });
    expect(formatIp(allocate(Pool.empty(v6.cidr), v6, { key: key("a") }).address)).toBe("2001:db8:0:8000::");
  });

  it("finds the first gap behind long runs of reservations", () => {
    const r = parseRange({ range: "10.0.0.0/16" });
    const reservations: Reservation[] = [];
    for (let i = 1; i < 5000; i++) if (i !== 4321) reservations.push({ offset: BigInt(i), key: key(`c${i}`) });
    const pool = Pool.fromReservations(r.cidr, reservations);
    expect(findFree(pool, r, r.first, r.last)).toBe(4321n);
    expect(findFree(pool, r, 4322n, r.last)).toBe(5000n);
  });

  it("rejects a pool of another CIDR", () => {
    expect(() => allocate(Pool.empty(parseCidr("10.1.0.0/24")), range, { key: key("a") })).toThrow(InvalidRequestError);
  });
});

describe("allocateAll (several ranges)", () => {
  const v4 = parseRange({ range: "10.0.0.0/30" });
  const v6 = parseRange({ range: "2001:db8::/64" });

  it("gives one address per range (dual-stack)", () => {
    const out = allocateAll(
      [
        { pool: Pool.empty(v4.cidr), range: v4 },
        { pool: Pool.empty(v6.cidr), range: v6 },
      ],
      { key: key("a") },
    );
    expect(out.map((o) => formatIp(o.address))).toEqual(["10.0.0.1", "2001:db8::1"]);
  });

  it("is all-or-nothing: a failing range throws and returns no partial state", () => {
    const full = fill(Pool.empty(v4.cidr), v4, 2);
    expect(() =>
      allocateAll(
        [
          { pool: Pool.empty(v6.cidr), range: v6 },
          { pool: full, range: v4 },
        ],
        { key: key("x") },
      ),
    ).toThrow(RangeExhaustedError);
  });

  it("places static addresses in the range that contains them", () => {
    const out = allocateAll(
      [
        { pool: Pool.empty(v4.cidr), range: v4 },
        { pool: Pool.empty(v6.cidr), range: v6 },
      ],
      {
        key: key("a"),
        addresses: ["2001:db8::99"],
      },
    );
    expect(out.map((o) => formatIp(o.address))).toEqual(["10.0.0.1", "2001:db8::99"]);
    expect(() => allocateAll([{ pool: Pool.empty(v4.cidr), range: v4 }], { key: key("a"), addresses: ["192.168.0.1"] })).toThrow(
      InvalidRequestError,
    );
  });
});

describe("release", () => {
  const range = parseRange({ range: "10.0.0.0/24" });

  it("releases by exact key only; a key holding nothing releases nothing and is no error", () => {
    const pool = fill(Pool.empty(range.cidr), range, 3);
    const r = release(pool, key("c1"));
    expect(r.released?.offset).toBe(2n);
    expect(r.pool.reservations().map((x) => x.key.containerId)).toEqual(["c0", "c2"]);
    const none = release(r.pool, key("c1"));
    expect(none.released).toBeUndefined();
    expect(none.pool).toBe(r.pool);
    expect(release(pool, key("c1", "net1")).released).toBeUndefined();
  });

  it("seed scenario: releasing the stale key of a reborn pod keeps the live one, for every read order", () => {
    const stale: Reservation = { offset: 10n, key: key("stale-container"), podRef: "ns/sts-0", podUid: "uid-old" };
    const live: Reservation = { offset: 11n, key: key("live-container"), podRef: "ns/sts-0", podUid: "uid-new" };
    for (const order of [
      [stale, live],
      [live, stale],
    ]) {
      const pool = Pool.fromReservations(range.cidr, order);
      const r = release(pool, stale.key);
      expect(r.released).toEqual(stale);
      expect(r.pool.reservations()).toEqual([live]);
      expect(formatIp(ipAt(range.cidr, (r.pool.forKey(live.key) as Reservation).offset))).toBe("10.0.0.11");
    }
  });

  it("releaseIf frees only an unchanged reservation", () => {
    const first = allocate(Pool.empty(range.cidr), range, { key: key("a"), podUid: "u1", now: "t1" });
    const observed = first.reservation;
    expect(releaseIf(first.pool, observed).outcome).toBe("released");
    // released and re-created by the same key in between: a different reservation
    const recreated = allocate(release(first.pool, key("a")).pool, range, { key: key("a"), podUid: "u2", now: "t2" });
    const r = releaseIf(recreated.pool, observed);
    expect(r.outcome).toBe("changed");
    expect(r.pool).toBe(recreated.pool);
    expect(releaseIf(Pool.empty(range.cidr), observed).outcome).toBe("absent");
  });
});
