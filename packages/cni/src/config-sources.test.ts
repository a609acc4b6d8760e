import { describe, expect, it } from "vitest";
import { CNI_FLAT, expectConfigError, HOST_FLAT, K8S_FLAT, load, memFs, netConf, onNode, V4 } from "./config-test-kit.js";

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

  it("looks only at the node's configuration path when it is set (a directory or a file), never at the config's", () => {
    const files = {
      [K8S_FLAT]: { network_name: "default" },
      "/opt/wa/whereabouts.conf": { network_name: "dir" },
      "/opt/x.conf": { network_name: "file" },
    };
    const on = (configurationPath: string) => ({ ...memFs(files), configurationPath });
    let config = load(netConf(V4), { fs: on("/opt/wa/") });
    expect([config.flatFile, config.networkName, config.warnings]).toEqual(["/opt/wa/whereabouts.conf", "dir", []]);
    config = load(netConf(V4), { fs: on("/opt/x.conf") });
    expect([config.flatFile, config.networkName]).toEqual(["/opt/x.conf", "file"]);
    config = load(netConf(V4), { fs: on("/opt/missing") });
    expect([config.flatFile, config.networkName]).toEqual([undefined, ""]);
    // a network config's configuration_path is not followed (issue 47): the defaults are searched
    config = load(netConf({ ...V4, configuration_path: "/opt/x.conf" }), { fs: memFs(files) });
    expect([config.flatFile, config.networkName]).toEqual([K8S_FLAT, "default"]);
    expect(config.warnings).toEqual([
      `ipam.configuration_path is a node-level setting and is ignored in a network config: the node's flat file ${K8S_FLAT} is used (the node names it with IPAMKIT_CONFIGURATION_PATH)`,
    ]);
  });

  it("fills only keys the inline config did not set, recursively, and inline values win", () => {
    const flat = { range: "10.9.0.0/24", network_name: "flat", gateway: "10.9.0.1", kubernetes: { kubeconfig: "/flat.kubeconfig" } };
    const fs = memFs({ [CNI_FLAT]: flat });
    const fromFlat = load(netConf({ kubernetes: { k8s_api_root: "https://api" } }), { fs });
    expect(fromFlat.ranges).toEqual([{ range: "10.9.0.0/24", gateway: "10.9.0.1" }]);
    expect(fromFlat.kubernetes).toEqual({ kubeconfig: "/flat.kubeconfig", whereaboutsLease: "auto" });
    expect(fromFlat.datastore).toBe("kubernetes");
    expect(fromFlat.networkName).toBe("flat");
    const inline = load(netConf({ ...V4, network_name: "", gateway: "10.0.0.254", kubernetes: { k8s_api_root: "https://api" } }), { fs });
    expect(inline.ranges).toEqual([{ range: "10.0.0.0/24", gateway: "10.0.0.254" }]);
    expect(inline.kubernetes).toEqual({ kubeconfig: "/flat.kubeconfig", whereaboutsLease: "auto" });
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
    expect(config.kubernetes).toEqual({ kubeconfig: INSTALLER_FLAT.kubernetes.kubeconfig, whereaboutsLease: "auto" });
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
    const fs = memFs({ [CNI_FLAT]: { datastore: "kubernetes", log_level: 5 } });
    expectConfigError(() => load(netConf(V4), { fs }), 7, "ipam.log_level", "5", CNI_FLAT);
    const badRange = memFs({ [CNI_FLAT]: { ipRanges: [{ range: "10.0.0.0/24", exclude: ["x"] }] } });
    expectConfigError(() => load(netConf({}), { fs: badRange }), 7, "ipam.ipRanges[0].exclude[0]", '"x"', CNI_FLAT);
    expectConfigError(() => load(netConf(V4), { fs: memFs({ [CNI_FLAT]: "[]" }) }), 7, CNI_FLAT, "JSON object");
  });
});

describe("loadIpamConfig: datastore", () => {
  it("infers the datastore: kubernetes from a kubeconfig, etcd from a host, else file", () => {
    const kube = { fs: onNode({ kubernetes: { kubeconfig: "/k" } }) };
    expect(load(netConf(V4), kube).datastore).toBe("kubernetes");
    expect(load(netConf({ ...V4, etcd_host: "etcd:2379" })).datastore).toBe("etcd");
    expect(load(netConf(V4)).datastore).toBe("file");
    const both = load(netConf({ ...V4, etcd_host: "etcd:2379" }), kube);
    expect(both.datastore).toBe("kubernetes");
    expect(both.warnings).toEqual(['ipam.etcd_host is accepted but unused: datastore is "kubernetes"']);
  });

  it("honours an explicit datastore and warns, one line per key, about the other stores' keys", () => {
    const config = load(
      netConf({
        ...V4,
        type: "ipamkit",
        datastore: "file",
        data_dir: "/d",
      }),
      { fs: onNode({ kubernetes: { kubeconfig: "/k" }, etcd_host: "h", etcd_password: "pw-value", etcd_ca_cert_file: "/ca" }) },
    );
    expect(config.datastore).toBe("file");
    expect(config.warnings).toEqual([
      `ipam.kubernetes.kubeconfig (from flat file ${CNI_FLAT}) is accepted but unused: datastore is "file"`,
      `ipam.etcd_host (from flat file ${CNI_FLAT}) is accepted but unused: datastore is "file"`,
      `ipam.etcd_password (from flat file ${CNI_FLAT}) is accepted but unused: datastore is "file"`,
      `ipam.etcd_ca_cert_file (from flat file ${CNI_FLAT}) is accepted but unused: datastore is "file"`,
    ]);
    const k8s = load(netConf({ ...V4, datastore: "kubernetes", data_dir: "/d" }), { fs: onNode({ kubernetes: { kubeconfig: "/k" } }) });
    expect(k8s.warnings).toEqual(['ipam.data_dir is accepted but unused: datastore is "kubernetes"']);
  });

  it('type "whereabouts" with a kubeconfig stays on Kubernetes whatever datastore says, as Whereabouts does (a stale datastore: etcd)', () => {
    const fs = memFs({ [CNI_FLAT]: { datastore: "kubernetes", kubernetes: { kubeconfig: "/k" } } });
    const stale = load(netConf({ ...V4, datastore: "etcd", etcd_host: "http://10.0.0.1:2379" }), { fs });
    expect(stale.datastore).toBe("kubernetes");
    expect(stale.warnings.join("\n")).toContain('ipam.datastore "etcd" is ignored: with type "whereabouts" and kubernetes.kubeconfig');
    expect(load(netConf({ ...V4, datastore: "consul" }), { fs }).datastore).toBe("kubernetes");
    // type "ipamkit" chooses its store as asked
    expect(load(netConf({ ...V4, type: "ipamkit", datastore: "etcd", etcd_host: "http://10.0.0.1:2379" }), { fs }).datastore).toBe("etcd");
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
        kubernetes: { k8s_api_root: "https://api" },
      }),
      { fs: onNode({ kubernetes: { kubeconfig: "/k" } }) },
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
