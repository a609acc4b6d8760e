import { parseRange } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { ConfigError, loadIpamConfig } from "./config.js";
import type { ConfigFs, IpamConfig } from "./types.js";

const K8S_FLAT = "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf";
const CNI_FLAT = "/etc/cni/net.d/whereabouts.d/whereabouts.conf";
const HOST_FLAT = "/host/etc/cni/net.d/whereabouts.d/whereabouts.conf";

type Command = "ADD" | "DEL" | "CHECK" | "GC" | "STATUS";

function memFs(files: Record<string, string | object> = {}): ConfigFs {
  const map = new Map(Object.entries(files).map(([path, body]) => [path, typeof body === "string" ? body : JSON.stringify(body)]));
  return {
    exists: (path) => map.has(path),
    readText: (path) => {
      const text = map.get(path);
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  };
}

function netConf(ipam: Record<string, unknown>, top: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: "1.1.0",
    name: "net1",
    type: "macvlan",
    master: "eth0",
    ipam: { type: "whereabouts", ...ipam },
    ...top,
  });
}

function load(stdin: string, options: { fs?: ConfigFs; command?: Command } = {}): IpamConfig {
  return loadIpamConfig(stdin, { fs: options.fs ?? memFs(), command: options.command ?? "ADD" });
}

/** Asserts a ConfigError with the code and key, whose message names the key and every fragment. */
function expectConfigError(run: () => unknown, code: 1 | 2 | 6 | 7, key: string, ...fragments: string[]): ConfigError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  const error = caught as ConfigError;
  expect({ code: error.cniCode, key: error.key }).toEqual({ code, key });
  expect(error.message).toContain(key);
  for (const fragment of fragments) expect(error.message).toContain(fragment);
  return error;
}

const V4 = { range: "10.0.0.0/24" };

describe("loadIpamConfig: valid configs", () => {
  it("loads a minimal config with every default", () => {
    const config = load(netConf(V4));
    expect(config).toEqual({
      cniVersion: "1.1.0",
      name: "net1",
      networkName: "",
      ranges: [{ range: "10.0.0.0/24" }],
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
        etcd_host: "https://etcd:2379",
        etcd_username: "ipam",
        etcd_password: "s3cret-pw",
        etcd_key_file: "/k",
        etcd_cert_file: "/c",
        etcd_ca_cert_file: "/ca",
      }),
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

  it("rejects a top-level gateway outside a same-family range, suggesting a per-range gateway", () => {
    expectConfigError(
      () => load(netConf({ range: "10.0.0.0/24", gateway: "10.0.0.1", ipRanges: [{ range: "10.2.0.0/24" }] })),
      7,
      "ipam.gateway",
      '"10.0.0.1"',
      "ipam.ipRanges[0].gateway",
    );
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
    expect(config.warnings).toEqual(["ipam.gateway is unused: every IPv6 range sets its own gateway"]);
  });

  it("rejects bad gateways naming the key they came from", () => {
    expectConfigError(() => load(netConf({ ...V4, gateway: "fd00::1" })), 7, "ipam.gateway", "no IPv6 range");
    const outside = expectConfigError(() => load(netConf({ ...V4, gateway: "10.0.1.1" })), 7, "ipam.gateway", '"10.0.1.1"', "not a usable");
    expect(outside.message).not.toContain("instead");
    expectConfigError(() => load(netConf({ ...V4, gateway: "nope" })), 7, "ipam.gateway", '"nope"');
    expectConfigError(
      () => load(netConf({ ipRanges: [{ range: "10.0.0.0/24" }, { range: "10.1.0.0/24", gateway: "10.9.0.1" }] })),
      7,
      "ipam.ipRanges[1].gateway",
      '"10.9.0.1"',
    );
  });
});

describe("loadIpamConfig: rejections", () => {
  it("fails with code 6 on undecodable stdin", () => {
    expectConfigError(() => load("{not json"), 6, "stdin", "not valid JSON");
    expectConfigError(() => load("[1]"), 7, "stdin", "JSON object");
  });

  it("fails with code 1 on an unsupported or absent cniVersion", () => {
    const stdin = (cniVersion?: string) => JSON.stringify({ cniVersion, name: "n", ipam: { type: "ipamkit", ...V4 } });
    expectConfigError(() => load(stdin("0.2.0")), 1, "cniVersion", '"0.2.0"', "1.1.0");
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

  it("rejects invalid ranges at load with code 7, naming key and value", () => {
    expectConfigError(() => load(netConf({ range: "10.0.1.0/29", range_start: "10.0.1.50" })), 7, "ipam.range_start", '"10.0.1.50"');
    expectConfigError(() => load(netConf({ ...V4, range_start: "10.0.0.50", range_end: "10.0.0.10" })), 7, "ipam.range_end", '"10.0.0.10"');
    expectConfigError(() => load(netConf({ range: "10.0.0.0/33" })), 7, "ipam.range", '"10.0.0.0/33"');
    expectConfigError(() => load(netConf({ range: "10.0.0.0/32" })), 7, "ipam.range", "no usable address");
    expectConfigError(() => load(netConf({ range: "10.0.0.20-10.0.0.10/24" })), 7, "ipam.range", '"10.0.0.20-10.0.0.10/24"');
    expectConfigError(() => load(netConf({ ...V4, exclude: ["10.0.0.5", "10.9.0.0/24"] })), 7, "ipam.exclude[1]", '"10.9.0.0/24"');
    expectConfigError(() => load(netConf({ ...V4, exclude: ["bogus"] })), 7, "ipam.exclude[0]", '"bogus"');
    const ipRanges = [{ range: "10.0.0.0/24" }, { range: "10.1.0.0/24", range_start: "10.2.0.5" }];
    expectConfigError(() => load(netConf({ ipRanges })), 7, "ipam.ipRanges[1].range_start", '"10.2.0.5"');
    expectConfigError(() => load(netConf({ ipRanges: [{ range: "fd00::/64", exclude: ["10.0.0.1"] }] })), 7, "ipam.ipRanges[0].exclude[0]");
    expectConfigError(() => load(netConf({ ipRanges: [{ range: "" }] })), 7, "ipam.ipRanges[0].range", '""');
    expectConfigError(() => load(netConf({ ipRanges: [{ range_start: "10.0.0.1" }] })), 7, "ipam.ipRanges[0].range", "(missing)");
    expectConfigError(() => load(netConf({ range_start: "10.0.0.5", ipRanges: [V4] })), 7, "ipam.range_start", "without ipam.range");
  });

  it("requires at least one range for every command", () => {
    const stdin = netConf({}, { "cni.dev/valid-attachments": [] });
    for (const command of ["ADD", "DEL", "CHECK", "GC", "STATUS"] as const) {
      expectConfigError(() => load(stdin, { command }), 7, "ipam.range", "at least one range");
    }
    expectConfigError(() => load(netConf({ range: "", ipRanges: [] })), 7, "ipam.range", "at least one range");
  });

  it("rejects unknown ipam keys at every level with code 7", () => {
    expectConfigError(() => load(netConf({ ...V4, rnage_end: "10.0.0.9" })), 7, "ipam.rnage_end", '"10.0.0.9"', "unknown key");
    expectConfigError(
      () => load(netConf({ ...V4, kubernetes: { kubeconfig: "/k", token: "x" } })),
      7,
      "ipam.kubernetes.token",
      "unknown key",
    );
    expectConfigError(() => load(netConf({ ipRanges: [{ ...V4, gw: "10.0.0.1" }] })), 7, "ipam.ipRanges[0].gw", "unknown key");
    expectConfigError(() => load(netConf({ ...V4, routes: [{ dst: "0.0.0.0/0", via: "x" }] })), 7, "ipam.routes[0].via");
  });

  it("rejects ill-typed or malformed values of known keys with code 7", () => {
    expectConfigError(() => load(netConf({ ...V4, enable_overlapping_ranges: "false" })), 7, "ipam.enable_overlapping_ranges", '"false"');
    expectConfigError(() => load(netConf({ ...V4, network_name: "Blue_Net" })), 7, "ipam.network_name", '"Blue_Net"', "DNS-1123");
    expectConfigError(() => load(netConf({ ...V4, network_name: "blue-" })), 7, "ipam.network_name", '"blue-"');
    expectConfigError(() => load(netConf({ ...V4, leader_lease_duration: "1500" })), 7, "ipam.leader_lease_duration", '"1500"');
    expectConfigError(() => load(netConf({ ...V4, routes: [{ dst: "default" }] })), 7, "ipam.routes[0].dst", '"default"');
    expectConfigError(() => load(netConf({ ...V4, routes: [{ dst: "0.0.0.0/0", gw: "x" }] })), 7, "ipam.routes[0].gw", '"x"');
    expectConfigError(() => load(netConf({ ...V4, dns: { nameservers: ["1.1.1.1", "dns"] } })), 7, "ipam.dns.nameservers[1]", '"dns"');
    expectConfigError(() => load(netConf({ ...V4, data_dir: "var/lib" })), 7, "ipam.data_dir", '"var/lib"', "absolute");
    expectConfigError(() => load(netConf({ ...V4, exclude: "10.0.0.1" })), 7, "ipam.exclude", '"10.0.0.1"');
    expectConfigError(() => load(netConf({ ...V4, range_start: null })), 7, "ipam.range_start", "null");
  });

  it("rejects unsupported values of known keys with code 2", () => {
    const addresses = [{ address: "10.0.0.5/24" }];
    expectConfigError(() => load(netConf({ ...V4, addresses })), 2, "ipam.addresses", "10.0.0.5/24", "not supported");
    expectConfigError(
      () => load(netConf({ ...V4, node_slice_size: "/22" })),
      2,
      "ipam.node_slice_size",
      '"/22"',
      "node-slice controller",
      "node_block_size",
    );
    expectConfigError(() => load(netConf({ ...V4, sleep_for_race: 3 })), 2, "ipam.sleep_for_race", "3");
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
      () => load(netConf({ ...V4, etcd_pasword: secret })),
      () => load(netConf({ ...V4, etcd_password: secret, datastore: "etcd" })),
      () => load(netConf({ range: "nope", etcd_password: secret })),
      () => load(`{"cniVersion":"1.1.0","ipam":{"etcd_password": ${secret}}}`),
      () => load(`{"cniVersion":"1.1.0","ipam":{"etcd_password": "${secret}" x}}`),
      () => load(netConf({ ...V4, etcd_password: secret, range_start: secret })),
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
    expect(load(netConf({ ...V4, etcd_password: secret })).warnings.join("\n")).not.toContain(secret);
  });
});

describe("loadIpamConfig: flat file", () => {
  const INSTALLER_FLAT = {
    datastore: "kubernetes",
    configuration_path: "/etc/cni/net.d/whereabouts.d",
    kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" },
    reconciler_cron_expression: "30 4 * * *",
  };

  it("is optional: a complete inline config loads without one", () => {
    expect(load(netConf(V4), { fs: memFs({ "/elsewhere/whereabouts.conf": { range: "10.9.0.0/24" } }) }).flatFile).toBeUndefined();
  });

  it("searches the default paths in order; the first that exists wins", () => {
    const all = { [K8S_FLAT]: { network_name: "k8s" }, [CNI_FLAT]: { network_name: "cni" }, [HOST_FLAT]: { network_name: "host" } };
    let config = load(netConf(V4), { fs: memFs(all) });
    expect([config.flatFile, config.networkName]).toEqual([K8S_FLAT, "k8s"]);
    config = load(netConf(V4), { fs: memFs({ [CNI_FLAT]: all[CNI_FLAT], [HOST_FLAT]: all[HOST_FLAT] }) });
    expect([config.flatFile, config.networkName]).toEqual([CNI_FLAT, "cni"]);
    config = load(netConf(V4), { fs: memFs({ [HOST_FLAT]: all[HOST_FLAT] }) });
    expect([config.flatFile, config.networkName]).toEqual([HOST_FLAT, "host"]);
  });

  it("looks at ipam.configuration_path first, as a directory or as a file", () => {
    const files = {
      [K8S_FLAT]: { network_name: "default" },
      "/opt/wa/whereabouts.conf": { network_name: "dir" },
      "/opt/x.conf": { network_name: "file" },
    };
    let config = load(netConf({ ...V4, configuration_path: "/opt/wa/" }), { fs: memFs(files) });
    expect([config.flatFile, config.networkName, config.warnings]).toEqual(["/opt/wa/whereabouts.conf", "dir", []]);
    config = load(netConf({ ...V4, configuration_path: "/opt/x.conf" }), { fs: memFs(files) });
    expect([config.flatFile, config.networkName]).toEqual(["/opt/x.conf", "file"]);
    config = load(netConf({ ...V4, configuration_path: "/opt/missing" }), { fs: memFs(files) });
    expect([config.flatFile, config.networkName]).toEqual([K8S_FLAT, "default"]);
    expect(config.warnings).toEqual([`ipam.configuration_path: no flat file at /opt/missing/whereabouts.conf; used ${K8S_FLAT}`]);
  });

  it("fills only keys the inline config did not set, recursively, and inline values win", () => {
    const flat = { range: "10.9.0.0/24", network_name: "flat", gateway: "10.9.0.1", kubernetes: { kubeconfig: "/flat.kubeconfig" } };
    const fs = memFs({ [CNI_FLAT]: flat });
    const fromFlat = load(netConf({ kubernetes: { k8s_api_root: "https://api" } }), { fs });
    expect(fromFlat.ranges).toEqual([{ range: "10.9.0.0/24", gateway: "10.9.0.1" }]);
    expect(fromFlat.kubernetes).toEqual({ kubeconfig: "/flat.kubeconfig" });
    expect(fromFlat.datastore).toBe("kubernetes");
    expect(fromFlat.networkName).toBe("flat");
    const inline = load(netConf({ ...V4, network_name: "", gateway: "10.0.0.254", kubernetes: { kubeconfig: "/inline" } }), { fs });
    expect(inline.ranges).toEqual([{ range: "10.0.0.0/24", gateway: "10.0.0.254" }]);
    expect(inline.kubernetes).toEqual({ kubeconfig: "/inline" });
    // "" was set inline: it is not a zero value the flat file may overwrite.
    expect(inline.networkName).toBe("");
  });

  it("never takes enable_overlapping_ranges from the flat file, and warns when it sets it", () => {
    const flatTrue = memFs({ [CNI_FLAT]: { enable_overlapping_ranges: true } });
    const flatFalse = memFs({ [CNI_FLAT]: { enable_overlapping_ranges: false } });
    expect(load(netConf({ ...V4, enable_overlapping_ranges: false }), { fs: flatTrue }).overlappingRanges).toBe(false);
    const config = load(netConf(V4), { fs: flatFalse });
    expect(config.overlappingRanges).toBe(true);
    expect(config.warnings).toHaveLength(1);
    expect(config.warnings[0]).toContain("enable_overlapping_ranges");
    expect(config.warnings[0]).toContain(CNI_FLAT);
    expect(load(netConf({ ...V4, enable_overlapping_ranges: true }), { fs: flatFalse }).overlappingRanges).toBe(true);
  });

  it("reads the installer's flat file: kubernetes datastore, cron warning naming the file", () => {
    const config = load(netConf(V4), { fs: memFs({ [CNI_FLAT]: INSTALLER_FLAT }) });
    expect(config.datastore).toBe("kubernetes");
    expect(config.kubernetes).toEqual({ kubeconfig: INSTALLER_FLAT.kubernetes.kubeconfig });
    expect(config.flatFile).toBe(CNI_FLAT);
    expect(config.warnings).toEqual([
      `ipam.reconciler_cron_expression (from flat file ${CNI_FLAT}) is accepted but unused: it is read by the reconciler, not by the plugin`,
    ]);
  });

  it("fails with code 6 naming the file when the flat file is not JSON", () => {
    const error = expectConfigError(() => load(netConf(V4), { fs: memFs({ [HOST_FLAT]: "{datastore: kubernetes" }) }), 6, HOST_FLAT);
    expect(error.message).toContain("not valid JSON");
  });

  it("fails with code 7 naming the key and the file when the flat file is invalid", () => {
    const fs = memFs({ [CNI_FLAT]: { datastore: "kubernetes", bogus: 1 } });
    expectConfigError(() => load(netConf(V4), { fs }), 7, "ipam.bogus", "unknown key", CNI_FLAT);
    const badRange = memFs({ [CNI_FLAT]: { range: "10.0.0.0/24", range_start: "10.1.0.1" } });
    expectConfigError(() => load(netConf({}), { fs: badRange }), 7, "ipam.range_start", '"10.1.0.1"', CNI_FLAT);
    expectConfigError(() => load(netConf(V4), { fs: memFs({ [CNI_FLAT]: "[]" }) }), 7, CNI_FLAT, "JSON object");
  });
});

describe("loadIpamConfig: datastore", () => {
  it("infers the datastore: kubernetes from a kubeconfig, etcd from a host, else file", () => {
    expect(load(netConf({ ...V4, kubernetes: { kubeconfig: "/k" } })).datastore).toBe("kubernetes");
    expect(load(netConf({ ...V4, etcd_host: "etcd:2379" })).datastore).toBe("etcd");
    expect(load(netConf(V4)).datastore).toBe("file");
    const both = load(netConf({ ...V4, kubernetes: { kubeconfig: "/k" }, etcd_host: "etcd:2379" }));
    expect(both.datastore).toBe("kubernetes");
    expect(both.warnings).toEqual(['ipam.etcd_host is accepted but unused: datastore is "kubernetes"']);
  });

  it("honours an explicit datastore and warns, one line per key, about the other stores' keys", () => {
    const config = load(
      netConf({
        ...V4,
        datastore: "file",
        data_dir: "/d",
        kubernetes: { kubeconfig: "/k" },
        etcd_host: "h",
        etcd_password: "pw-value",
        etcd_ca_cert_file: "/ca",
      }),
    );
    expect(config.datastore).toBe("file");
    expect(config.warnings).toEqual([
      'ipam.kubernetes.kubeconfig is accepted but unused: datastore is "file"',
      'ipam.etcd_host is accepted but unused: datastore is "file"',
      'ipam.etcd_password is accepted but unused: datastore is "file"',
      'ipam.etcd_ca_cert_file is accepted but unused: datastore is "file"',
    ]);
    const k8s = load(netConf({ ...V4, datastore: "kubernetes", kubernetes: { kubeconfig: "/k" }, data_dir: "/d" }));
    expect(k8s.warnings).toEqual(['ipam.data_dir is accepted but unused: datastore is "kubernetes"']);
  });

  it("requires the chosen store's settings with code 7", () => {
    expectConfigError(() => load(netConf({ ...V4, datastore: "etcd" })), 7, "ipam.etcd_host", "required");
    expectConfigError(() => load(netConf({ ...V4, datastore: "kubernetes" })), 7, "ipam.kubernetes.kubeconfig", "required");
    expectConfigError(
      () => load(netConf({ ...V4, datastore: "kubernetes", kubernetes: { kubeconfig: "" } })),
      7,
      "ipam.kubernetes.kubeconfig",
    );
  });
});

describe("loadIpamConfig: warnings", () => {
  it("warns once per accepted Whereabouts key that ipamkit does not use", () => {
    const config = load(
      netConf({
        ...V4,
        leader_lease_duration: 1500,
        leader_renew_deadline: 1000,
        leader_retry_period: 500,
        reconciler_cron_expression: "30 4 * * *",
        log_file: "/var/log/whereabouts.log",
        log_level: "debug",
        kubernetes: { kubeconfig: "/k", k8s_api_root: "https://api" },
      }),
    );
    expect(config.datastore).toBe("kubernetes");
    const keys = config.warnings.map((line) => line.slice(0, line.indexOf(" ")));
    expect(keys).toEqual([
      "ipam.leader_lease_duration",
      "ipam.leader_renew_deadline",
      "ipam.leader_retry_period",
      "ipam.reconciler_cron_expression",
      "ipam.log_file",
      "ipam.log_level",
      "ipam.kubernetes.k8s_api_root",
    ]);
    expect(config.warnings[0]).toContain("Lease");
    expect(config.warnings[5]).toContain("stderr");
  });

  it("warns about runtimeConfig.ipRanges, which the ipam block overrides", () => {
    expect(load(netConf(V4, { runtimeConfig: { ipRanges: [[{ subnet: "10.0.0.0/24" }]] } })).warnings).toEqual([
      "runtimeConfig.ipRanges is accepted but unused: ranges come from the ipam block",
    ]);
  });
});

describe("loadIpamConfig: requested IPs and GC", () => {
  it("collects runtimeConfig.ips and args.cni.ips without prefix, canonical and de-duplicated", () => {
    const config = load(
      netConf(V4, {
        runtimeConfig: { ips: ["10.0.0.42/24", "2001:DB8::0005"], mac: "aa:bb:cc:dd:ee:ff" },
        args: { cni: { ips: ["10.0.0.42", "10.0.0.7"] } },
      }),
    );
    expect(config.requestedIps).toEqual(["10.0.0.42", "2001:db8::5", "10.0.0.7"]);
  });

  it("rejects malformed requested IPs with code 7 naming the entry", () => {
    expectConfigError(
      () => load(netConf(V4, { runtimeConfig: { ips: ["10.0.0.1", "10.0.0.300"] } })),
      7,
      "runtimeConfig.ips[1]",
      '"10.0.0.300"',
    );
    expectConfigError(() => load(netConf(V4, { args: { cni: { ips: ["10.0.0.1/40"] } } })), 7, "args.cni.ips[0]", '"10.0.0.1/40"');
    expectConfigError(() => load(netConf(V4, { runtimeConfig: { ips: "10.0.0.1" } })), 7, "runtimeConfig.ips", '"10.0.0.1"');
  });

  it("requires cni.dev/valid-attachments for GC only, and keeps an empty list as []", () => {
    expectConfigError(() => load(netConf(V4), { command: "GC" }), 7, "cni.dev/valid-attachments", "required for GC");
    expect(load(netConf(V4, { "cni.dev/valid-attachments": [] }), { command: "GC" }).validAttachments).toEqual([]);
    const attachments = [{ containerID: "c1", ifname: "net1", extra: true }];
    expect(load(netConf(V4, { "cni.dev/valid-attachments": attachments }), { command: "GC" }).validAttachments).toEqual([
      { containerID: "c1", ifname: "net1" },
    ]);
    for (const command of ["ADD", "DEL", "CHECK", "STATUS"] as const) {
      expect(load(netConf(V4), { command }).validAttachments).toBeUndefined();
    }
    const missingIfname = netConf(V4, { "cni.dev/valid-attachments": [{ containerID: "c1" }] });
    expectConfigError(() => load(missingIfname, { command: "GC" }), 7, "cni.dev/valid-attachments[0].ifname", "(missing)");
  });
});
