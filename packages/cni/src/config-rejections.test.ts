import { describe, expect, it } from "vitest";
import { ConfigError } from "./config.js";
import { expectConfigError, load, netConf, onNode, V4 } from "./config-test-kit.js";

describe("loadIpamConfig: rejections", () => {
  it("fails with code 6 on undecodable stdin", () => {
    expectConfigError(() => load("{not json"), 6, "stdin", "not valid JSON");
    expectConfigError(() => load("[1]"), 7, "stdin", "JSON object");
  });

  it("fails with code 1 on an unsupported or absent cniVersion", () => {
    const stdin = (cniVersion?: string) => JSON.stringify({ cniVersion, name: "n", ipam: { type: "ipamkit", ...V4 } });
    expectConfigError(() => load(stdin("0.0.9")), 1, "cniVersion", '"0.0.9"', "1.1.0");
    expectConfigError(() => load(stdin("2.0.0")), 1, "cniVersion", '"2.0.0"');
    expectConfigError(() => load(stdin()), 1, "cniVersion", "(missing)");
  });

  it("fails with code 7 on top-level shape errors", () => {
    expectConfigError(() => load(netConf(V4, { name: "-bad" })), 7, "name", '"-bad"');
    expectConfigError(() => load(netConf(V4, { name: "a b" })), 7, "name", '"a b"');
    expectConfigError(() => load(JSON.stringify({ cniVersion: "1.0.0", ipam: { type: "ipamkit", ...V4 } })), 7, "name", "(missing)");
    expectConfigError(() => load(JSON.stringify({ cniVersion: "1.0.0", name: "n" })), 7, "ipam", "(missing)", "required");
    expectConfigError(() => load(netConf({ ...V4, type: "host-local" })), 7, "ipam.type", '"host-local"', '"ipamkit" or "whereabouts"');
    expectConfigError(() => load(netConf(V4, { disableGC: "yes" })), 7, "disableGC", '"yes"');
  });

  it("rejects unreadable ranges at load with code 7, naming key and value", () => {
    expectConfigError(() => load(netConf({ range: "10.0.0.0/33" })), 7, "ipam.range", '"10.0.0.0/33"');
    expectConfigError(() => load(netConf({ range: "10.0.0.0/32" })), 7, "ipam.range", "no usable address", "/30");
    expectConfigError(() => load(netConf({ range: "10.0.0.0" })), 7, "ipam.range", "not a CIDR");
    expectConfigError(() => load(netConf({ range: "10.0.1.5-10.0.0.0/24" })), 7, "ipam.range", "outside 10.0.0.0/24");
    expectConfigError(() => load(netConf({ ...V4, exclude: ["bogus"] })), 7, "ipam.exclude[0]", '"bogus"', "no leading zeros");
    expectConfigError(() => load(netConf({ ipRanges: [{ ...V4, range_start: "010.0.0.5" }] })), 7, "ipam.ipRanges[0].range_start");
    expectConfigError(() => load(netConf({ ipRanges: [{ range: "" }] })), 7, "ipam.ipRanges[0].range", '""');
    expectConfigError(() => load(netConf({ ipRanges: [{ range_start: "10.0.0.1" }] })), 7, "ipam.ipRanges[0].range", "(missing)");
  });

  it("requires at least one range for every command", () => {
    const stdin = netConf({}, { "cni.dev/valid-attachments": [] });
    for (const command of ["ADD", "DEL", "CHECK", "GC", "STATUS"] as const) {
      expectConfigError(() => load(stdin, { command }), 7, "ipam.range", "at least one range");
    }
    expectConfigError(() => load(netConf({ range: "", ipRanges: [] })), 7, "ipam.range", "at least one range");
  });

  it("rejects ill-typed or malformed values of known keys with code 7", () => {
    expectConfigError(() => load(netConf({ ...V4, enable_overlapping_ranges: "false" })), 7, "ipam.enable_overlapping_ranges", '"false"');
    expectConfigError(() => load(netConf({ ...V4, network_name: "Blue_Net" })), 7, "ipam.network_name", '"Blue_Net"', "DNS-1123");
    expectConfigError(() => load(netConf({ ...V4, network_name: "blue-" })), 7, "ipam.network_name", '"blue-"');
    expectConfigError(() => load(netConf({ ...V4, leader_lease_duration: "1500" })), 7, "ipam.leader_lease_duration", '"1500"');
    expectConfigError(() => load(netConf({ ...V4, routes: [{ dst: "default" }] })), 7, "ipam.routes[0].dst", '"default"');
    expectConfigError(() => load(netConf({ ...V4, routes: [{ dst: "0.0.0.0/0", gw: "x" }] })), 7, "ipam.routes[0].gw", '"x"');
    expectConfigError(() => load(netConf({ ...V4, data_dir: "var/lib" })), 7, "ipam.data_dir", '"var/lib"', "absolute");
    expectConfigError(() => load(netConf({ ...V4, exclude: "10.0.0.1" })), 7, "ipam.exclude", '"10.0.0.1"');
    expectConfigError(() => load(netConf({ ...V4, range_start: 5 })), 7, "ipam.range_start", "5");
  });

  it("rejects unsupported values of known keys with code 2", () => {
    // node slices live in NodeSlicePools: the Kubernetes store's (node-slice.test.ts has the rest)
    expectConfigError(
      () => load(netConf({ ...V4, node_slice_size: "/26" })),
      7,
      "ipam.node_slice_size",
      '"/26"',
      'needs datastore "kubernetes"',
    );
    expectConfigError(() => load(netConf({ ...V4, datastore: "consul" })), 2, "ipam.datastore", '"consul"');
    expectConfigError(() => load(netConf({ ...V4, allocation_policy: "random" })), 2, "ipam.allocation_policy", '"random"');
  });

  it("takes per-node blocks: a power-of-two block size and an optional node name", () => {
    expect(load(netConf({ ...V4, node_block_size: 16 })).nodeBlocks).toEqual({ size: 16 });
    expect(load(netConf({ ...V4, node_block_size: 64, node_name: "worker-1.example" })).nodeBlocks).toEqual({
      size: 64,
      node: "worker-1.example",
    });
    for (const size of [2, 3, 12, 100])
      expectConfigError(() => load(netConf({ ...V4, node_block_size: size })), 7, "ipam.node_block_size", String(size), "power of two");
    expectConfigError(() => load(netConf({ ...V4, node_block_size: 0 })), 7, "ipam.node_block_size", "0");
    // every range must hold two blocks at least (a /24 holds two of 128, not of 256)
    expect(load(netConf({ ...V4, node_block_size: 128 })).nodeBlocks).toEqual({ size: 128 });
    expectConfigError(
      () => load(netConf({ ipRanges: [{ range: "10.0.0.0/16" }, { range: "10.1.0.0/24" }], node_block_size: 256 })),
      7,
      "ipam.node_block_size",
      "256",
      "range 10.1.0.0/24 must hold at least two blocks",
    );
    expectConfigError(() => load(netConf({ ...V4, node_block_size: "16" })), 7, "ipam.node_block_size", '"16"');
    expectConfigError(() => load(netConf({ ...V4, node_block_size: 16, node_name: "a/b" })), 7, "ipam.node_name", '"a/b"');
    for (const reserved of ["node-blocks", "tenant-node-blocks"]) {
      expectConfigError(() => load(netConf({ ...V4, network_name: reserved })), 7, "ipam.network_name", "reserved");
    }
    const alone = load(netConf({ ...V4, node_name: "n1" }));
    expect(alone.nodeBlocks).toBeUndefined();
    expect(alone.warnings.join("\n")).toMatch(/node_name is accepted but unused/);
  });

  it("never puts etcd_password in an error message", () => {
    const secret = "hunter2-Secret";
    const cases: (() => unknown)[] = [
      () => load(netConf({ ...V4, etcd_password: [secret] })),
      () => load(netConf({ ...V4, etcd_password: secret, datastore: "etcd" })),
      () => load(netConf({ range: "nope", etcd_password: secret })),
      () => load(`{"cniVersion":"1.1.0","ipam":{"etcd_password": ${secret}}}`),
      () => load(`{"cniVersion":"1.1.0","ipam":{"etcd_password": "${secret}" x}}`),
      () => load(netConf({ ...V4, etcd_password: secret, exclude: [secret] })),
    ];
    for (const run of cases) {
      expect(run).toThrow(ConfigError);
      try {
        run();
      } catch (error) {
        expect((error as Error).message).not.toContain(secret);
      }
    }
    expectConfigError(cases[0] as () => unknown, 7, "ipam.etcd_password", "<redacted>");
    // a network config's password differing from the node's: ignored, and not named in the warning
    expect(load(netConf({ ...V4, etcd_password: secret }), { fs: onNode({ etcd_password: "node-pw" }) }).warnings.join("\n")).not.toContain(
      secret,
    );
    // a misspelt password key is dropped with a warning that does not show its value
    const warned = load(netConf({ ...V4, etcd_pasword: secret })).warnings.join("\n");
    expect(warned).toContain("ipam.etcd_pasword");
    expect(warned).not.toContain(secret);
  });
});
