import { describe, expect, it } from "vitest";
import { expectConfigError, load, netConf, onNode, V4 } from "./config-test-kit.js";

// Configs read as Whereabouts v0.9 reads them (pkg/config/config.go, pkg/types/types.go,
// pkg/iphelpers GetIPRange): what is accepted, how ranges come out, and the warning each gets.

const warningsOf = (ipam: Record<string, unknown>, top: Record<string, unknown> = {}) => load(netConf(ipam, top)).warnings.join("\n");

describe("keys as Go's encoding/json reads them", () => {
  it("reads a Whereabouts key in another case as its own, with a warning", () => {
    const config = load(netConf({ Range: "10.0.0.0/24", RANGE_START: "10.0.0.10" }));
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24", range_start: "10.0.0.10" }]);
    expect(config.warnings).toContain("ipam.Range is read as ipam.range (Whereabouts matches keys case-insensitively); write ipam.range");
  });

  it("ignores unknown keys at every level with one warning each, naming the nearest accepted key", () => {
    const config = load(
      netConf({
        ...V4,
        range_stat: "10.0.0.5",
        subnet: "10.0.0.0/24",
        name: "x",
        kubernetes: { kubeconfig: "/k", namespace: "kube-system" },
        routes: [{ dst: "0.0.0.0/0", metric: 100 }],
        ipRanges: [{ range: "10.1.0.0/24", gw: "10.1.0.1" }],
      }),
      // the kubeconfig is the node's (a network config may only repeat it)
      { fs: onNode({ kubernetes: { kubeconfig: "/k" } }) },
    );
    expect(config.ranges[0]).toEqual({ range: "10.0.0.0/24" });
    expect(config.routes).toEqual([{ dst: "0.0.0.0/0" }]);
    const text = config.warnings.join("\n");
    expect(text).toContain(
      'ipam.range_stat "10.0.0.5" is not a Whereabouts or ipamkit key: ignored, as Whereabouts ignores it (did you mean ipam.range_start?)',
    );
    expect(text).toContain("ipam.subnet");
    expect(text).toContain("ipam.name");
    expect(text).toContain("ipam.kubernetes.namespace");
    expect(text).toContain("ipam.routes[0].metric");
    expect(text).toContain("ipam.ipRanges[0].gw");
  });

  it("takes null as unset (`routes: null`, the form Whereabouts' own code writes), without a warning", () => {
    const config = load(netConf({ ...V4, routes: null, dns: null, exclude: null, range_start: null }));
    expect(config.routes).toEqual([]);
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24" }]);
    expect(config.warnings).toEqual([]);
  });

  it("accepts sleep_for_race and dns name servers given as host names, with a warning", () => {
    expect(warningsOf({ ...V4, sleep_for_race: 2 })).toContain("ipam.sleep_for_race is accepted but unused");
    const config = load(netConf({ ...V4, dns: { nameservers: ["10.96.0.10", "dns.example.com"] } }));
    expect(config.dns).toEqual({ nameservers: ["10.96.0.10", "dns.example.com"] });
    expect(config.warnings.join("\n")).toContain('ipam.dns.nameservers[1] "dns.example.com" is not an IP address');
  });
});

describe("ranges as Whereabouts reads them", () => {
  it("reads IPv4 octets with leading zeros in range, range_start and gateway (ParseIPSloppy)", () => {
    const config = load(netConf({ range: "00192.00168.1.0/24", range_start: "192.168.001.010", gateway: "192.168.1.001" }));
    expect(config.ranges).toEqual([{ range: "192.168.1.0/24", range_start: "192.168.1.10", gateway: "192.168.1.1" }]);
    expect(config.gateways).toEqual(["192.168.1.1"]);
  });

  it("ignores bounds outside the usable span, or an end below the start, with a warning each (GetIPRange)", () => {
    const outside = load(netConf({ range: "10.0.0.0/24", range_start: "10.0.1.5", range_end: "10.0.0.0" }));
    expect(outside.ranges).toEqual([{ range: "10.0.0.0/24" }]);
    expect(outside.warnings.join("\n")).toMatch(/range_start 10\.0\.1\.5 is ignored: outside the usable span of 10\.0\.0\.0\/24/);
    expect(outside.warnings.join("\n")).toMatch(/range_end 10\.0\.0\.0 is ignored/);
    const reversed = load(netConf({ range: "10.0.0.0/24", range_start: "10.0.0.50", range_end: "10.0.0.10" }));
    expect(reversed.ranges).toEqual([{ range: "10.0.0.0/24", range_start: "10.0.0.50" }]);
    expect(reversed.warnings.join("\n")).toContain("range_end 10.0.0.10 is ignored: below range_start");
    // Whereabouts' own tested form: a first-last/prefix range starting at the network address
    const v6 = load(netConf({ range: "2001:db8:5422:0005::-2001:db8:5422:0005:7fff:ffff:ffff:ffff/64" }));
    expect(v6.ranges).toEqual([{ range: "2001:db8:5422:5::/64", range_end: "2001:db8:5422:5:7fff:ffff:ffff:ffff" }]);
    // an unreadable top-level bound is ignored (sanitizeIP); an entry's is refused (net.IP)
    expect(load(netConf({ ...V4, range_start: "10.0.0.1OO" })).ranges).toEqual([{ range: "10.0.0.0/24" }]);
    expectConfigError(() => load(netConf({ ipRanges: [{ ...V4, range_end: "nope" }] })), 7, "ipam.ipRanges[0].range_end", '"nope"');
  });

  it("lets first-last/prefix give the bounds over range_start/range_end, with a warning", () => {
    const config = load(netConf({ range: "10.0.0.10-10.0.0.20/24", range_start: "10.0.0.5" }));
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24", range_start: "10.0.0.10", range_end: "10.0.0.20" }]);
    expect(config.warnings.join("\n")).toContain('ipam.range_start "10.0.0.5" is ignored: ipam.range gives the bounds');
  });

  it("drops excludes outside the range and keys set without a range, with a warning each", () => {
    const config = load(
      netConf({ ipRanges: [{ range: "10.0.0.0/24", exclude: ["10.0.0.0/30", "10.9.0.0/24", "fd00::/64"] }], exclude: ["10.0.0.5"] }),
    );
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24", exclude: ["10.0.0.0/30"] }]);
    const text = config.warnings.join("\n");
    expect(text).toContain('ipam.ipRanges[0].exclude[1] "10.9.0.0/24" has no effect: outside range 10.0.0.0/24');
    expect(text).toContain('ipam.ipRanges[0].exclude[2] "fd00::/64" has no effect');
    expect(text).toContain("ipam.exclude is ignored: set without ipam.range");
  });

  it("refuses what fails every Whereabouts ADD, naming the nearest accepted form", () => {
    for (const range of ["10.0.0.0/31", "10.0.0.1/32", "fd00::/127"]) {
      expectConfigError(() => load(netConf({ range })), 7, "ipam.range", "no usable address", "or wider");
    }
    expectConfigError(() => load(netConf({ ...V4, exclude: ["010.0.0.5"] })), 7, "ipam.exclude[0]", "no leading zeros");
    expectConfigError(() => load(netConf({ ...V4, gateway: "10.0.0.x" })), 7, "ipam.gateway", "not an IP address");
  });
});

describe("errors: one line naming the key, its value and the nearest accepted form", () => {
  it("suggests the value in the right JSON type", () => {
    expectConfigError(
      () => load(netConf({ ...V4, enable_overlapping_ranges: "false" })),
      7,
      "ipam.enable_overlapping_ranges",
      "write false (no quotes)",
    );
    expectConfigError(
      () => load(netConf({ ...V4, leader_lease_duration: "1500" })),
      7,
      "ipam.leader_lease_duration",
      "write 1500 (no quotes)",
    );
    expectConfigError(() => load(netConf({ ...V4, log_level: 5 })), 7, "ipam.log_level", 'write "5"');
    expectConfigError(() => load(netConf({ ...V4, exclude: "10.0.0.1" })), 7, "ipam.exclude", 'write ["10.0.0.1"]');
    const error = expectConfigError(() => load(netConf({ ...V4, network_name: "Tenant_A" })), 7, "ipam.network_name", 'e.g. "tenant-a"');
    expect(error.message.includes("\n")).toBe(false);
  });
});

describe("results Whereabouts gives", () => {
  it("appends static addresses (addresses) after the allocated ones", () => {
    const config = load(netConf({ ...V4, addresses: [{ address: "10.10.0.5/24", gateway: "10.10.0.254" }, { address: "fd00::5/64" }] }));
    expect(config.staticAddresses).toEqual([{ address: "10.10.0.5/24", gateway: "10.10.0.254" }, { address: "fd00::5/64" }]);
    expectConfigError(
      () => load(netConf({ ...V4, addresses: [{ address: "10.10.0.5" }] })),
      7,
      "ipam.addresses[0].address",
      "address/prefix",
    );
  });

  it("speaks cniVersion 0.1.0 and 0.2.0, refusing two addresses of one family there", () => {
    expect(load(netConf(V4, { cniVersion: "0.2.0" })).cniVersion).toBe("0.2.0");
    expectConfigError(
      () => load(netConf({ ...V4, addresses: [{ address: "10.10.0.5/24" }] }, { cniVersion: "0.2.0" })),
      7,
      "cniVersion",
      "one IPv4 address",
      "0.3.1",
    );
  });
});
