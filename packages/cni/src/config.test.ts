import { parseRange } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { expectConfigError, load, netConf, onNode, V4 } from "./config-test-kit.js";
import type { IpamConfig } from "./types.js";

describe("loadIpamConfig: valid configs", () => {
  it("loads a minimal config with every default", () => {
    const config = load(netConf(V4));
    expect(config).toEqual({
      cniVersion: "1.1.0",
      name: "net1",
      networkName: "",
      ranges: [{ range: "10.0.0.0/24" }],
      gateways: [undefined],
      staticAddresses: [],
      routes: [],
      dns: undefined,
      overlappingRanges: true,
      policy: "lowest-free",
      datastore: "file",
      dataDir: "/var/lib/cni/ipamkit",
      etcd: {},
      kubernetes: {},
      agent: { required: false },
      requestedIps: [],
      nodeBlocks: undefined,
      validAttachments: undefined,
      prevResult: undefined,
      flatFile: undefined,
      warnings: [],
    } satisfies IpamConfig);
  });

  it('accepts ipam.type "ipamkit" and every supported cniVersion', () => {
    for (const cniVersion of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
      const stdin = JSON.stringify({ cniVersion, name: "n", type: "bridge", ipam: { type: "ipamkit", ...V4 } });
      expect(load(stdin).cniVersion).toBe(cniVersion);
    }
  });

  it("canonicalises ranges and keeps them acceptable to parseRange", () => {
    const config = load(netConf({ range: "192.168.2.225/28", exclude: ["192.168.2.230"] }));
    expect(config.ranges).toEqual([{ range: "192.168.2.224/28", exclude: ["192.168.2.230"] }]);
    const firstLast = load(netConf({ range: "10.0.0.10-10.0.0.20/24" })).ranges;
    expect(firstLast).toEqual([{ range: "10.0.0.0/24", range_start: "10.0.0.10", range_end: "10.0.0.20" }]);
    for (const spec of [...config.ranges, ...firstLast]) expect(parseRange(spec).spec).toEqual(spec);
  });

  it("puts the top-level range first, then ipRanges in order (dual-stack)", () => {
    const config = load(
      netConf({
        range: "10.0.0.0/24",
        range_start: "10.0.0.10",
        range_end: "10.0.0.50",
        exclude: ["10.0.0.20/30"],
        ipRanges: [{ range: "fd00::/120", range_start: "fd00::10", exclude: ["fd00::11"] }, { range: "10.1.0.0/24" }],
      }),
    );
    expect(config.ranges).toEqual([
      { range: "10.0.0.0/24", range_start: "10.0.0.10", range_end: "10.0.0.50", exclude: ["10.0.0.20/30"] },
      { range: "fd00::/120", range_start: "fd00::10", exclude: ["fd00::11"] },
      { range: "10.1.0.0/24" },
    ]);
  });

  it("accepts ipRanges alone and the CNI reserved/top-level keys", () => {
    const prevResult = { cniVersion: "1.1.0", ips: [{ address: "10.0.0.2/24" }] };
    const config = load(
      netConf(
        { ipRanges: [{ range: "10.0.0.0/24" }], routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1" }], dns: { nameservers: ["10.0.0.53"] } },
        { prevResult, cniVersions: ["1.0.0", "1.1.0"], disableGC: false, disableCheck: true, mtu: 1400, capabilitiesX: {} },
      ),
    );
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24" }]);
    expect(config.routes).toEqual([{ dst: "0.0.0.0/0", gw: "10.0.0.1" }]);
    expect(config.dns).toEqual({ nameservers: ["10.0.0.53"] });
    expect(config.prevResult).toEqual(prevResult);
  });

  it("maps network_name, allocation_policy, data_dir, addresses: [] and the etcd settings", () => {
    const config = load(
      netConf({
        ...V4,
        network_name: "blue-net",
        allocation_policy: "round-robin",
        addresses: [],
        node_slice_size: "",
        sleep_for_race: 0,
      }),
      // the credentials are the node's, and so is the host they are presented to (issue 47)
      {
        fs: onNode({
          etcd_host: "https://etcd:2379",
          etcd_username: "ipam",
          etcd_password: "s3cret-pw",
          etcd_key_file: "/k",
          etcd_cert_file: "/c",
          etcd_ca_cert_file: "/ca",
        }),
      },
    );
    expect(config.networkName).toBe("blue-net");
    expect(config.policy).toBe("round-robin");
    expect(config.datastore).toBe("etcd");
    expect(config.etcd).toEqual({
      host: "https://etcd:2379",
      username: "ipam",
      password: "s3cret-pw",
      keyFile: "/k",
      certFile: "/c",
      caCertFile: "/ca",
    });
    expect(load(netConf({ ...V4, data_dir: "/run/ipam" })).dataDir).toBe("/run/ipam");
  });
});

describe("loadIpamConfig: gateways", () => {
  it("attaches the top-level gateway only to ranges of its own family", () => {
    const ipRanges = [{ range: "fd00::/64" }, { range: "10.2.0.0/24", gateway: "10.2.0.1" }];
    const config = load(netConf({ range: "10.0.0.0/24", gateway: "10.0.0.1", ipRanges }));
    expect(config.ranges).toEqual([
      { range: "10.0.0.0/24", gateway: "10.0.0.1" },
      { range: "fd00::/64" },
      { range: "10.2.0.0/24", gateway: "10.2.0.1" },
    ]);
    const v6 = load(netConf({ range: "10.0.0.0/24", gateway: "fd00::1", ipRanges: [{ range: "fd00::/64" }] }));
    expect(v6.ranges).toEqual([{ range: "10.0.0.0/24" }, { range: "fd00::/64", gateway: "fd00::1" }]);
    expect(v6.warnings).toEqual([]);
  });

  it("accepts a gateway outside its range, as Whereabouts does: reported in the result, nothing reserved", () => {
    const config = load(netConf({ range: "10.0.0.0/24", gateway: "10.0.9.1", ipRanges: [{ range: "10.2.0.0/24" }] }));
    expect(config.ranges).toEqual([{ range: "10.0.0.0/24" }, { range: "10.2.0.0/24" }]);
    expect(config.gateways).toEqual(["10.0.9.1", "10.0.9.1"]);
    // Whereabouts' README IPv6 example: 2001::0/116 with gateway 2001::f:1 (outside the /116)
    const v6 = load(netConf({ range: "2001::0/116", gateway: "2001::f:1" }));
    expect(v6.ranges).toEqual([{ range: "2001::/116" }]);
    expect(v6.gateways).toEqual(["2001::f:1"]);
  });

  it("lets a per-entry gateway win and warns when the top-level gateway is left unused", () => {
    const config = load(
      netConf({
        gateway: "fd00::1",
        ipRanges: [
          { range: "fd00::/64", gateway: "fd00::fe" },
          { range: "10.0.0.0/24", gateway: "10.0.0.254" },
        ],
      }),
    );
    expect(config.ranges).toEqual([
      { range: "fd00::/64", gateway: "fd00::fe" },
      { range: "10.0.0.0/24", gateway: "10.0.0.254" },
    ]);
    expect(config.warnings).toEqual(['ipam.gateway "fd00::1" is unused: every IPv6 range sets its own gateway']);
  });

  it("rejects unreadable gateways naming the key they came from; one of the other family is unused, with a warning", () => {
    expect(load(netConf({ ...V4, gateway: "fd00::1" })).warnings.join("\n")).toContain('ipam.gateway "fd00::1" is unused: no IPv6 range');
    expectConfigError(() => load(netConf({ ...V4, gateway: "nope" })), 7, "ipam.gateway", '"nope"');
    expectConfigError(
      () => load(netConf({ ipRanges: [{ range: "10.0.0.0/24" }, { range: "10.1.0.0/24", gateway: "fd00::1" }] })),
      7,
      "ipam.ipRanges[1].gateway",
      '"fd00::1"',
      "not an IPv4 address",
    );
  });
});
