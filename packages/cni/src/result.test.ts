import { parseIp } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { type AssignedIp, buildResult, parsePrevResult } from "./result.js";
import type { CniVersion, Dns, Route } from "./types.js";

const v4: AssignedIp = { address: parseIp("10.1.2.5"), prefix: 24, gateway: parseIp("10.1.2.1") };
const v6: AssignedIp = { address: parseIp("2001:DB8:0:0::0005"), prefix: 64 };
const routes: Route[] = [
  { dst: "0.0.0.0/0", gw: "10.1.2.1", mtu: 1400, advmss: 1360, priority: 10, table: 100, scope: 0 },
  { dst: "192.168.0.0/16" },
];
const dns: Dns = { nameservers: ["10.1.0.10"], domain: "cluster.local", search: ["svc.cluster.local"], options: ["ndots:5"] };

const build = (cniVersion: Exclude<CniVersion, "0.1.0" | "0.2.0">, extra: { routes?: Route[]; dns?: Dns } = {}) =>
  buildResult({ cniVersion, ips: [v4, v6], routes: extra.routes ?? [], dns: extra.dns });

describe("buildResult", () => {
  it.each(["0.1.0", "0.2.0"] as const)(
    "%s: ip4/ip6 with the first address of each family, routes inside their family, dns always",
    (cniVersion) => {
      const second = { address: parseIp("10.1.3.5"), prefix: 24 };
      const result = buildResult({
        cniVersion,
        ips: [v4, v6, second],
        routes: [...routes, { dst: "::/0", gw: "2001:db8::1" }],
        dns: undefined,
      });
      expect(result).toEqual({
        cniVersion,
        ip4: { ip: "10.1.2.5/24", gateway: "10.1.2.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.2.1" }, { dst: "192.168.0.0/16" }] },
        ip6: { ip: "2001:db8::5/64", routes: [{ dst: "::/0", gw: "2001:db8::1" }] },
        dns: {},
      });
    },
  );
  it.each(["0.3.0", "0.3.1", "0.4.0"] as const)("%s: ips carry version, routes keep only dst and gw", (cniVersion) => {
    expect(build(cniVersion, { routes, dns })).toEqual({
      cniVersion,
      ips: [
        { version: "4", address: "10.1.2.5/24", gateway: "10.1.2.1" },
        { version: "6", address: "2001:db8::5/64" },
      ],
      routes: [{ dst: "0.0.0.0/0", gw: "10.1.2.1" }, { dst: "192.168.0.0/16" }],
      dns,
    });
  });
  it("1.0.0: no ips[].version, routes keep only dst and gw", () => {
    const result = build("1.0.0", { routes, dns });
    expect(result).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.1.2.5/24", gateway: "10.1.2.1" }, { address: "2001:db8::5/64" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.1.2.1" }, { dst: "192.168.0.0/16" }],
      dns,
    });
    for (const ip of result.ips) expect("version" in ip).toBe(false);
  });
  it("1.1.0: no ips[].version, routes keep mtu, advmss, priority, table and scope", () => {
    expect(build("1.1.0", { routes, dns })).toEqual({
      cniVersion: "1.1.0",
      ips: [{ address: "10.1.2.5/24", gateway: "10.1.2.1" }, { address: "2001:db8::5/64" }],
      routes: [
        { dst: "0.0.0.0/0", gw: "10.1.2.1", mtu: 1400, advmss: 1360, priority: 10, table: 100, scope: 0 },
        { dst: "192.168.0.0/16" },
      ],
      dns,
    });
  });
  it("serialises with exactly the wire keys (no undefined leftovers, no interfaces)", () => {
    const json = JSON.parse(JSON.stringify(build("0.4.0", { routes })));
    expect(Object.keys(json)).toEqual(["cniVersion", "ips", "routes"]);
    expect(Object.keys(json.ips[0])).toEqual(["version", "address", "gateway"]);
    expect(Object.keys(json.ips[1])).toEqual(["version", "address"]);
    expect(Object.keys(json.routes[0])).toEqual(["dst", "gw"]);
    expect(Object.keys(JSON.parse(JSON.stringify(build("1.1.0", { routes }))).routes[0])).toEqual([
      "dst",
      "gw",
      "mtu",
      "advmss",
      "priority",
      "table",
      "scope",
    ]);
    for (const v of ["0.3.0", "1.0.0", "1.1.0"] as const) {
      const r = JSON.parse(JSON.stringify(build(v)));
      expect(r.interfaces).toBeUndefined();
      for (const ip of r.ips) expect(ip.interface).toBeUndefined();
    }
  });
  it("omits routes and dns when empty or undefined", () => {
    for (const v of ["0.3.1", "1.0.0", "1.1.0"] as const) {
      expect(Object.keys(build(v))).toEqual(["cniVersion", "ips"]);
      expect(Object.keys(build(v, { dns: {} }))).toEqual(["cniVersion", "ips"]);
      expect(Object.keys(build(v, { dns: { nameservers: [], search: [], options: [], domain: "" } }))).toEqual(["cniVersion", "ips"]);
    }
  });
  it("keeps only the non-empty dns fields", () => {
    expect(build("1.0.0", { dns: { nameservers: ["8.8.8.8"], search: [] } }).dns).toEqual({ nameservers: ["8.8.8.8"] });
  });
  it("does not alias the input routes or dns", () => {
    const r = build("1.1.0", { routes, dns });
    expect(r.routes?.[0]).not.toBe(routes[0]);
    expect(r.dns?.nameservers).not.toBe(dns.nameservers);
  });
  it("renders canonical address text and keeps the host part of the address", () => {
    const r = buildResult({ cniVersion: "1.0.0", ips: [{ address: parseIp("010.001.002.200"), prefix: 8 }], routes: [], dns: undefined });
    expect(r.ips).toEqual([{ address: "10.1.2.200/8" }]);
  });
  it("rejects an impossible prefix or a gateway of the other family", () => {
    expect(() =>
      buildResult({ cniVersion: "1.0.0", ips: [{ address: parseIp("10.0.0.1"), prefix: 33 }], routes: [], dns: undefined }),
    ).toThrow(/prefix 33/);
    expect(() =>
      buildResult({
        cniVersion: "1.0.0",
        ips: [{ address: parseIp("10.0.0.1"), prefix: 24, gateway: parseIp("fe80::1") }],
        routes: [],
        dns: undefined,
      }),
    ).toThrow(/family/);
  });
});

describe("parsePrevResult", () => {
  it("reads a 0.3.1 full result (interfaces, ips[].interface, version)", () => {
    const prev = {
      cniVersion: "0.3.1",
      interfaces: [{ name: "eth0", mac: "aa:bb:cc:dd:ee:ff", sandbox: "/var/run/netns/x" }],
      ips: [
        { version: "4", interface: 0, address: "10.1.2.5/24", gateway: "10.1.2.1" },
        { version: "6", interface: 0, address: "2001:DB8::0:5/64" },
      ],
      routes: [{ dst: "0.0.0.0/0" }],
      dns: {},
    };
    expect(parsePrevResult(prev)).toEqual([{ address: "10.1.2.5/24", gateway: "10.1.2.1" }, { address: "2001:db8::5/64" }]);
  });
  it("reads a 0.4.0 IPAM result", () => {
    expect(parsePrevResult({ cniVersion: "0.4.0", ips: [{ version: "4", address: "192.168.1.10/16" }] })).toEqual([
      { address: "192.168.1.10/16" },
    ]);
  });
  it("reads 1.0.0 and 1.1.0 results (no version, optional interface)", () => {
    const prev = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "net1" }],
      ips: [{ interface: 0, address: "10.1.2.5/24", gateway: "10.1.2.1" }, { address: "fd00::a/120" }],
    };
    expect(parsePrevResult(prev)).toEqual([{ address: "10.1.2.5/24", gateway: "10.1.2.1" }, { address: "fd00::a/120" }]);
    expect(parsePrevResult({ ...prev, cniVersion: "1.1.0" })).toEqual(parsePrevResult(prev));
  });
  it("round-trips every result buildResult produces", () => {
    for (const v of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const) {
      expect(parsePrevResult(JSON.parse(JSON.stringify(build(v, { routes, dns }))))).toEqual([
        { address: "10.1.2.5/24", gateway: "10.1.2.1" },
        { address: "2001:db8::5/64" },
      ]);
    }
  });
  it("canonicalises addresses and gateways", () => {
    expect(parsePrevResult({ ips: [{ address: "010.001.002.005/24", gateway: "10.1.2.01" }] })).toEqual([
      { address: "10.1.2.5/24", gateway: "10.1.2.1" },
    ]);
    expect(parsePrevResult({ ips: [{ address: "2001:0DB8:0000::0001/64", gateway: "2001:0db8::0001" }] })).toEqual([
      { address: "2001:db8::1/64", gateway: "2001:db8::1" },
    ]);
  });
  it("treats a missing ips list as no addresses, and empty gateways as none", () => {
    expect(parsePrevResult({ cniVersion: "1.0.0" })).toEqual([]);
    expect(parsePrevResult({ cniVersion: "1.0.0", ips: [] })).toEqual([]);
    expect(parsePrevResult({ ips: [{ address: "10.0.0.2/8", gateway: "" }] })).toEqual([{ address: "10.0.0.2/8" }]);
  });
  it.each([
    ["a non-object", "nope", /expected a JSON object/],
    ["null", null, /expected a JSON object/],
    ["an array", [], /expected a JSON object/],
    ["ips not an array", { ips: {} }, /"ips" must be an array/],
    ["an entry that is not an object", { ips: ["10.0.0.1/24"] }, /ips\[0\] must be an object/],
    ["a missing address", { ips: [{ gateway: "10.0.0.1" }] }, /ips\[0\]\.address must be a string/],
    ["an address without prefix", { ips: [{ address: "10.0.0.5" }] }, /needs a \/prefix/],
    ["a bad address", { ips: [{ address: "10.0.0.256/24" }] }, /ips\[0\]\.address "10\.0\.0\.256\/24" is not a valid IP/],
    ["a prefix too long", { ips: [{ address: "10.0.0.5/33" }] }, /prefix outside 0\.\.32/],
    ["a non-numeric prefix", { ips: [{ address: "fd00::1/abc" }] }, /prefix outside 0\.\.128/],
    ["a bad gateway", { ips: [{ address: "10.0.0.5/24", gateway: "nope" }] }, /ips\[0\]\.gateway "nope"/],
    ["a non-string gateway", { ips: [{ address: "10.0.0.5/24", gateway: 7 }] }, /gateway must be a string/],
    ["a gateway of the other family", { ips: [{ address: "10.0.0.5/24", gateway: "fd00::1" }] }, /not of the family/],
    ["a version that contradicts the address", { ips: [{ version: "6", address: "10.0.0.5/24" }] }, /version "6" does not match/],
    ["the pre-0.3.0 shape", { cniVersion: "0.2.0", ip4: { ip: "10.0.0.5/24" } }, /pre-0\.3\.0/],
  ])("throws a plain Error naming the problem for %s", (_label, prev, message) => {
    let caught: unknown;
    try {
      parsePrevResult(prev);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(Error);
    expect((caught as Error).constructor).toBe(Error);
    expect((caught as Error).message).toMatch(/^invalid prevResult: /);
    expect((caught as Error).message).toMatch(message);
  });
  it("names the index of the bad entry", () => {
    expect(() => parsePrevResult({ ips: [{ address: "10.0.0.5/24" }, { address: "x/24" }] })).toThrow(/ips\[1\]\.address/);
  });
});
