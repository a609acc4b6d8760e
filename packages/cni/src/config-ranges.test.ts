import { describe, expect, it } from "vitest";
import { ConfigError, loadIpamConfig } from "./config.js";

// Found by the hostile-input test (issue 39): `0.0.0.0/0` and `::/0` were accepted and handed out
// `::1/0`; `10.0.0.77/24` was silently taken as `10.0.0.0/24`. A range shorter than /8 is now refused
// (code 7, naming the key and value); host bits are still accepted, as Whereabouts does, but stated.

const load = (ipam: Record<string, unknown>) =>
  loadIpamConfig(JSON.stringify({ cniVersion: "1.1.0", name: "n", type: "macvlan", ipam: { type: "whereabouts", ...ipam } }), {
    fs: { exists: () => false, readText: () => "" },
    command: "ADD",
  });

function configError(ipam: Record<string, unknown>): ConfigError {
  try {
    load(ipam);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`accepted: ${JSON.stringify(ipam)}`);
}

describe("a range shorter than /8", () => {
  for (const [ipam, key, value] of [
    [{ range: "0.0.0.0/0" }, "ipam.range", "0.0.0.0/0"],
    [{ range: "::/0" }, "ipam.range", "::/0"],
    [{ range: "10.0.0.0/24", ipRanges: [{ range: "::/0" }] }, "ipam.ipRanges[0].range", "::/0"],
    [{ ipRanges: [{ range: "fd00::/8" }, { range: "0.0.0.0/7" }] }, "ipam.ipRanges[1].range", "0.0.0.0/7"],
  ] as const) {
    it(`${JSON.stringify(ipam)}: code 7 naming ${key} and "${value}"`, () => {
      const error = configError(ipam);
      expect({ code: error.cniCode, key: error.key }).toEqual({ code: 7, key });
      expect(error.message).toContain(`${key} "${value}"`);
      expect(error.message).toMatch(/shorter than \/8/);
    });
  }

  it("/8 is accepted in both families", () => {
    expect(load({ ipRanges: [{ range: "10.0.0.0/8" }, { range: "fd00::/8" }] }).ranges.map((r) => r.range)).toEqual([
      "10.0.0.0/8",
      "fd00::/8",
    ]);
  });
});

describe("host bits set", () => {
  it("10.0.0.77/24 is taken as 10.0.0.0/24, and a warning names the key, the value and what it is taken as", () => {
    const config = load({ range: "10.0.0.77/24" });
    expect(config.ranges[0]?.range).toBe("10.0.0.0/24");
    expect(config.warnings).toEqual(['ipam.range "10.0.0.77/24" has host bits set: taken as 10.0.0.0/24']);
  });

  it("in ipRanges and excludes too; IPv6; not for first-last/prefix, case or a network address", () => {
    const config = load({
      range: "10.0.0.10-10.0.0.20/24",
      exclude: ["10.0.0.13/30", "10.0.0.16/30", "10.0.0.19"],
      ipRanges: [{ range: "FD00:1::5/64" }, { range: "fd00:2::/64" }, { range: "10.1.0.0/16", exclude: ["10.1.2.3/24"] }],
    });
    expect(config.warnings).toEqual([
      'ipam.exclude[0] "10.0.0.13/30" has host bits set: taken as 10.0.0.12/30',
      'ipam.ipRanges[0].range "FD00:1::5/64" has host bits set: taken as fd00:1::/64',
      'ipam.ipRanges[2].exclude[0] "10.1.2.3/24" has host bits set: taken as 10.1.2.0/24',
    ]);
  });
});
