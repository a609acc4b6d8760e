import { describe, expect, it } from "vitest";
import { InvalidRangeError } from "./errors.js";
import { formatIp, ipAt } from "./ip.js";
import { isAssignable, MIN_RANGE_PREFIX, parseRange, type RangeSpec } from "./range.js";

function rejects(spec: RangeSpec, key: string, value: string) {
  let caught: unknown;
  try {
    parseRange(spec);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(InvalidRangeError);
  const error = caught as InvalidRangeError;
  expect(error.code).toBe("INVALID_RANGE");
  expect(error.key).toBe(key);
  expect(error.value).toBe(value);
  expect(error.message).toContain(key);
}

describe("parseRange", () => {
  it("canonicalises a CIDR and spans network+1 .. broadcast-1", () => {
    const r = parseRange({ range: "192.168.2.225/28" });
    expect(r.cidr.text).toBe("192.168.2.224/28");
    expect(r.first).toBe(1n);
    expect(r.last).toBe(14n);
    expect(r.capacity).toBe(14n);
    expect(isAssignable(r, 0n)).toBe(false);
    expect(isAssignable(r, 15n)).toBe(false);
  });
  it("skips the IPv6 network (subnet-router anycast) and all-ones addresses, like Whereabouts", () => {
    const r = parseRange({ range: "2001:db8::/64" });
    expect(r.first).toBe(1n);
    expect(r.last).toBe((1n << 64n) - 2n);
  });
  it("reads first-last/prefix", () => {
    const r = parseRange({ range: "10.0.0.10-10.0.0.20/24" });
    expect(r.cidr.text).toBe("10.0.0.0/24");
    expect([r.first, r.last]).toEqual([10n, 20n]);
    expect(r.spec).toEqual({ range: "10.0.0.0/24", range_start: "10.0.0.10", range_end: "10.0.0.20" });
  });
  it("applies range_start/range_end", () => {
    const r = parseRange({ range: "10.0.0.0/24", range_start: "10.0.0.100", range_end: "10.0.0.110" });
    expect([r.first, r.last, r.capacity]).toEqual([100n, 110n, 11n]);
  });
  it("merges excludes (CIDRs and bare IPs) and the gateway into sorted blocked intervals", () => {
    const r = parseRange({ range: "10.0.0.0/24", exclude: ["10.0.0.16/28", "10.0.0.5", "10.0.0.6", "10.0.0.0/30"], gateway: "10.0.0.1" });
    expect(r.blocked.map((b) => [b.from, b.to])).toEqual([
      [1n, 3n],
      [5n, 6n],
      [16n, 31n],
    ]);
    expect(r.capacity).toBe(254n - 3n - 2n - 16n);
    expect(isAssignable(r, 1n)).toBe(false);
    expect(isAssignable(r, 4n)).toBe(true);
    expect(r.spec.gateway).toBe("10.0.0.1");
  });
  it("rejects out-of-range range_start and range_end (Whereabouts silently ignores them)", () => {
    rejects({ range: "10.0.0.0/24", range_start: "10.0.1.5" }, "range_start", "10.0.1.5");
    rejects({ range: "10.0.0.0/24", range_end: "10.0.0.255" }, "range_end", "10.0.0.255");
    rejects({ range: "10.0.0.0/24", range_start: "10.0.0.0" }, "range_start", "10.0.0.0");
  });
  it("rejects start after end", () => {
    rejects({ range: "10.0.0.0/24", range_start: "10.0.0.50", range_end: "10.0.0.40" }, "range_end", "10.0.0.40");
  });
  it("rejects excludes outside the range and malformed excludes", () => {
    rejects({ range: "10.0.0.0/24", exclude: ["10.0.1.0/24"] }, "exclude", "10.0.1.0/24");
    rejects({ range: "10.0.0.0/24", exclude: ["10.0.0.300"] }, "exclude", "10.0.0.300");
  });
  it("rejects mixed families", () => {
    rejects({ range: "10.0.0.0/24", range_start: "2001:db8::1" }, "range_start", "2001:db8::1");
    rejects({ range: "2001:db8::/64", exclude: ["10.0.0.1"] }, "exclude", "10.0.0.1");
    rejects({ range: "10.0.0.0/24", gateway: "fe80::1" }, "gateway", "fe80::1");
  });
  it("rejects a gateway outside the range (#139) and ranges without a usable address", () => {
    rejects({ range: "10.0.0.0/24", gateway: "10.0.1.1" }, "gateway", "10.0.1.1");
    for (const range of ["10.0.0.0/31", "10.0.0.1/32", "2001:db8::/127", "::1/128"]) rejects({ range }, "range", range);
    rejects({ range: "10.0.0.0/30", exclude: ["10.0.0.1"], gateway: "10.0.0.2" }, "range", "10.0.0.0/30");
  });
  it("rejects malformed ranges", () => {
    rejects({ range: "" }, "range", "");
    rejects({ range: "10.0.0.0" }, "range", "10.0.0.0");
    rejects({ range: "10.0.0.5-10.0.0.9" }, "range", "10.0.0.5-10.0.0.9");
    rejects({ range: "10.0.1.5-10.0.0.9/24" }, "range", "10.0.1.5-10.0.0.9/24");
  });
  it("hands out x.y.1.0 inside a /16 (only the network address is skipped; documented)", () => {
    const r = parseRange({ range: "10.1.0.0/16" });
    expect(isAssignable(r, 256n)).toBe(true);
    expect(formatIp(ipAt(r.cidr, 256n))).toBe("10.1.1.0");
  });
  // Found by the hostile-input test (issue 39): `0.0.0.0/0` and `::/0` were accepted and handed out
  // `0.0.0.1/0` and `::1/0`.
  it(`refuses a prefix shorter than /${MIN_RANGE_PREFIX} (a default route), in either family and form`, () => {
    for (const range of ["0.0.0.0/0", "::/0", "0.0.0.0/1", "::/1", "128.0.0.0/7", "fc00::/7", "10.0.0.1-10.0.0.9/0"]) {
      rejects({ range }, "range", range);
    }
    expect(() => parseRange({ range: "::/0" })).toThrow(/prefix \/0 is shorter than \/8: .*it would hand out ::1\/0/);
    expect(parseRange({ range: "10.0.0.0/8" }).cidr.text).toBe("10.0.0.0/8");
    expect(parseRange({ range: "fd00::/8" }).cidr.text).toBe("fd00::/8");
  });
});
