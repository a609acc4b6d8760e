import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidAddressError } from "./errors.js";
import { cidrOf, cidrsOverlap, formatIp, ipAt, offsetOf, parseCidr, parseIp } from "./ip.js";

describe("parseIp / formatIp", () => {
  it("parses both families to full-width values", () => {
    expect(parseIp("192.168.1.1")).toEqual({ family: 4, value: 0xc0a80101n });
    expect(parseIp("::1")).toEqual({ family: 6, value: 1n });
    expect(parseIp("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff").value).toBe((1n << 128n) - 1n);
  });
  it("reads IPv4 octets with leading zeros as decimal, as Whereabouts accepts them", () => {
    expect(formatIp(parseIp("010.001.002.003"))).toBe("10.1.2.3");
  });
  it("formats IPv6 canonically (RFC 5952)", () => {
    expect(formatIp(parseIp("2001:0db8:0000:0000:0000:0000:0000:0001"))).toBe("2001:db8::1");
  });
  it.each(["", "1.2.3", "1.2.3.256", "1.2.3.4/24", "fe80::1%eth0", "gibberish", "1::2::3"])("rejects %j with a typed error", (text) => {
    expect(() => parseIp(text)).toThrow(InvalidAddressError);
  });
});

describe("offsets", () => {
  it("computes Whereabouts' latent borrow case exactly: 192.168.3.1 - 192.168.2.2 = 255", () => {
    const base = parseIp("192.168.2.2");
    expect(parseIp("192.168.3.1").value - base.value).toBe(255n);
    const cidr = parseCidr("192.168.2.0/23");
    expect(offsetOf(cidr, parseIp("192.168.3.1")) - offsetOf(cidr, base)).toBe(255n);
  });
  it("is exact at and above 2^63 and 2^64 in IPv6 ranges (no truncation)", () => {
    const cidr = parseCidr("2001:db8::/32");
    const high = parseIp("2001:db8:8000:0:0:0:0:1");
    expect(offsetOf(cidr, high)).toBe((1n << 95n) + 1n);
    expect(formatIp(ipAt(cidr, (1n << 64n) + 5n))).toBe("2001:db8:0:1::5");
    expect(formatIp(ipAt(cidr, 1n << 63n))).toBe("2001:db8:0:0:8000::");
  });
  it("rejects addresses and offsets outside the CIDR", () => {
    const cidr = parseCidr("10.0.0.0/24");
    expect(() => offsetOf(cidr, parseIp("10.0.1.0"))).toThrow(InvalidAddressError);
    expect(() => ipAt(cidr, 256n)).toThrow(InvalidAddressError);
    expect(() => ipAt(cidr, -1n)).toThrow(InvalidAddressError);
  });

  const cases: [string, number][] = [
    ["10.0.0.0", 8],
    ["172.16.0.0", 16],
    ["192.168.7.0", 24],
    ["0.0.0.0", 0],
    ["2001:db8::", 48],
    ["2001:db8:1:2::", 64],
    ["2001:db8::", 96],
    ["::", 0],
    ["fd00::", 8],
  ];
  for (const [net, prefix] of cases) {
    const cidr = parseCidr(`${net}/${prefix}`);
    it(`round-trips offset <-> address and keeps order on ${cidr.text}`, () => {
      const offset = fc.bigInt({ min: 0n, max: cidr.size - 1n });
      fc.assert(
        fc.property(offset, offset, (a, b) => {
          const ipA = ipAt(cidr, a);
          const ipB = ipAt(cidr, b);
          expect(offsetOf(cidr, parseIp(formatIp(ipA)))).toBe(a);
          expect(Math.sign(Number(a - b))).toBe(Math.sign(Number(ipA.value - ipB.value)));
          expect(ipB.value - ipA.value).toBe(b - a);
        }),
        { numRuns: 300 },
      );
      // edges: network address and last address
      expect(offsetOf(cidr, parseIp(formatIp(ipAt(cidr, 0n))))).toBe(0n);
      expect(offsetOf(cidr, parseIp(formatIp(ipAt(cidr, cidr.size - 1n))))).toBe(cidr.size - 1n);
    });
  }
});

describe("CIDRs", () => {
  it("canonicalises to the network address, as Whereabouts stores spec.range", () => {
    expect(parseCidr("192.168.2.225/28").text).toBe("192.168.2.224/28");
    expect(parseCidr("2001:db8::1/64").text).toBe("2001:db8::/64");
    expect(cidrOf(parseIp("10.1.2.3"), 8).text).toBe("10.0.0.0/8");
  });
  it("rejects a missing or impossible prefix", () => {
    expect(() => parseCidr("10.0.0.0")).toThrow(InvalidAddressError);
    expect(() => parseCidr("10.0.0.0/33")).toThrow(InvalidAddressError);
    expect(() => parseCidr("::/129")).toThrow(InvalidAddressError);
  });
  it("detects overlap only within a family", () => {
    expect(cidrsOverlap(parseCidr("10.0.0.0/16"), parseCidr("10.0.5.0/24"))).toBe(true);
    expect(cidrsOverlap(parseCidr("10.0.0.0/24"), parseCidr("10.0.1.0/24"))).toBe(false);
    expect(cidrsOverlap(parseCidr("0.0.0.0/0"), parseCidr("::/0"))).toBe(false);
  });
});
