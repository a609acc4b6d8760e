import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PoolCorruptError } from "./errors.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { Pool } from "./pool.js";
import type { Reservation } from "./reservation.js";

const cidr = parseCidr("10.0.0.0/16");
const res = (offset: bigint, id: string, ifName = "eth0"): Reservation => ({ offset, key: attachmentKey({ containerId: id, ifName }) });

describe("Pool", () => {
  it("keeps reservations in one stable order (by offset) whatever order they are read in", () => {
    const input = Array.from({ length: 600 }, (_, i) => res(BigInt(i * 7 + 1), `c${i}`));
    fc.assert(
      fc.property(fc.shuffledSubarray(input, { minLength: input.length, maxLength: input.length }), (shuffled) => {
        const pool = Pool.fromReservations(cidr, shuffled);
        expect(pool.reservations().map((r) => r.offset)).toEqual(input.map((r) => r.offset));
        expect([...pool].map((r) => r.key.containerId)).toEqual(input.map((r) => r.key.containerId));
      }),
      { numRuns: 25 },
    );
  });
  it("reports two reservations at one offset as corruption", () => {
    expect(() => Pool.fromReservations(cidr, [res(5n, "a"), res(5n, "b")])).toThrow(PoolCorruptError);
  });
  it("reports one key at two offsets as corruption", () => {
    expect(() => Pool.fromReservations(cidr, [res(5n, "a"), res(6n, "a")])).toThrow(/holds two addresses/);
  });
  it("reports an offset outside the CIDR as corruption", () => {
    expect(() => Pool.fromReservations(cidr, [res(65536n, "a")])).toThrow(PoolCorruptError);
  });
  it("is immutable: with/without return new pools and leave the old one unchanged", () => {
    const a = Pool.fromReservations(cidr, [res(1n, "a")]);
    const b = a.with(res(2n, "b"));
    const c = b.without(attachmentKey({ containerId: "a", ifName: "eth0" }));
    expect([a.size, b.size, c.size]).toEqual([1, 2, 1]);
    expect(a.atOffset(2n)).toBeUndefined();
    expect(c.forKey(attachmentKey({ containerId: "b", ifName: "eth0" }))?.offset).toBe(2n);
    expect(() => b.with(res(2n, "z"))).toThrow(PoolCorruptError);
  });
});
