import { describe, expect, it } from "vitest";
import { formatIp, ipAt } from "./ip.js";
import { parseRange } from "./range.js";
import { sliceRange } from "./slice-range.js";

const bounds = (r: ReturnType<typeof sliceRange>) =>
  r === undefined ? "none" : `${r.cidr.text} ${formatIp(ipAt(r.cidr, r.first))}-${formatIp(ipAt(r.cidr, r.last))} cap ${r.capacity}`;

describe("sliceRange: a node's slice as a range of its own", () => {
  it("spans the slice's network + 1 to its last address - 1, as Whereabouts' FirstUsableIP/LastUsableIP", () => {
    const range = parseRange({ range: "10.90.0.0/22" });
    expect(bounds(sliceRange(range, "10.90.0.0/24"))).toBe("10.90.0.0/24 10.90.0.1-10.90.0.254 cap 254");
    expect(bounds(sliceRange(range, "10.90.1.0/24"))).toBe("10.90.1.0/24 10.90.1.1-10.90.1.254 cap 254");
    expect(bounds(sliceRange(range, "10.90.3.0/24"))).toBe("10.90.3.0/24 10.90.3.1-10.90.3.254 cap 254");
  });

  it("keeps the range's range_start/range_end, excludes and gateway, shifted to the slice's offsets", () => {
    const range = parseRange({
      range: "10.90.0.0/22",
      range_start: "10.90.1.100",
      range_end: "10.90.2.9",
      exclude: ["10.90.1.128/25"],
      gateway: "10.90.2.1",
    });
    const one = sliceRange(range, "10.90.1.0/24");
    expect(bounds(one)).toBe("10.90.1.0/24 10.90.1.100-10.90.1.254 cap 28");
    expect(one?.blocked).toEqual([{ from: 128n, to: 254n }]);
    const two = sliceRange(range, "10.90.2.0/24");
    expect(bounds(two)).toBe("10.90.2.0/24 10.90.2.1-10.90.2.9 cap 8");
    expect(two?.blocked).toEqual([{ from: 1n, to: 1n }]);
    expect(two?.gateway && formatIp(two.gateway)).toBe("10.90.2.1");
    // outside range_start..range_end: nothing to hand out
    expect(sliceRange(range, "10.90.0.0/24")).toBeUndefined();
    expect(sliceRange(range, "10.90.3.0/24")).toBeUndefined();
  });

  it("works for IPv6 slices", () => {
    const range = parseRange({ range: "fd00::/112", exclude: ["fd00::101"] });
    const slice = sliceRange(range, "fd00::100/120");
    expect(bounds(slice)).toBe("fd00::100/120 fd00::101-fd00::1fe cap 253");
  });

  it("refuses a slice outside the range or wider than it; a slice without usable addresses is none", () => {
    const range = parseRange({ range: "10.90.0.0/22" });
    expect(() => sliceRange(range, "10.91.0.0/24")).toThrow(/not a slice of range 10.90.0.0\/22/);
    expect(() => sliceRange(range, "10.88.0.0/20")).toThrow(/not a slice/);
    expect(() => sliceRange(range, "fd00::/120")).toThrow(/not a slice/);
    expect(() => sliceRange(range, "nonsense")).toThrow(/not a CIDR/);
    expect(sliceRange(range, "10.90.0.4/31")).toBeUndefined();
  });
});
