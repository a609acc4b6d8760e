import { describe, expect, it } from "vitest";
import { CNI_FLAT, expectConfigError, load, memFs, netConf, V4 } from "./config-test-kit.js";

// Issue 47: a network config (a NetworkAttachmentDefinition any namespace's author may write) does
// not choose what root's plugin talks to, trusts, or reads with credentials.
describe("loadIpamConfig: node-level keys", () => {
  const KUBE = "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig";

  it("ignores the agent keys and configuration_path of a network config, one warning each", () => {
    const fs = memFs({ [CNI_FLAT]: { agent_socket: "/run/ipamkit/agent.sock" } });
    const config = load(
      netConf({ ...V4, agent_socket: "/tmp/evil.sock", agent_required: true, agent_uid: 65534, configuration_path: "/tmp/evil" }),
      { fs },
    );
    expect(config.agent).toEqual({ socket: "/run/ipamkit/agent.sock", required: false });
    expect(config.flatFile).toBe(CNI_FLAT);
    expect(config.warnings).toEqual([
      `ipam.agent_socket is a node-level setting and is ignored in a network config: the node's flat file ${CNI_FLAT} sets another value, which is used`,
      `ipam.agent_required is a node-level setting and is ignored in a network config: the node's flat file ${CNI_FLAT} sets none`,
      `ipam.agent_uid is a node-level setting and is ignored in a network config: the node's flat file ${CNI_FLAT} sets none`,
      `ipam.configuration_path is a node-level setting and is ignored in a network config: the node's flat file ${CNI_FLAT} is used (the node names it with IPAMKIT_CONFIGURATION_PATH)`,
    ]);
  });

  it("says nothing when the network config repeats the node's values (a Whereabouts NAD naming the installer's files)", () => {
    const fs = memFs({ [CNI_FLAT]: { kubernetes: { kubeconfig: KUBE }, agent_socket: "/run/a.sock" } });
    const config = load(
      netConf({ ...V4, kubernetes: { kubeconfig: KUBE }, configuration_path: "/etc/cni/net.d/whereabouts.d", agent_socket: "/run/a.sock" }),
      { fs },
    );
    expect(config.warnings).toEqual([]);
    expect([config.datastore, config.kubernetes.kubeconfig]).toEqual(["kubernetes", KUBE]);
  });

  it("a store credential that differs from the node's: the node's is used, with a warning; none on the node: refused", () => {
    const fs = memFs({ [CNI_FLAT]: { kubernetes: { kubeconfig: KUBE } } });
    const other = load(netConf({ ...V4, kubernetes: { kubeconfig: "/etc/kubernetes/admin.conf" } }), { fs });
    expect(other.kubernetes.kubeconfig).toBe(KUBE);
    expect(other.warnings).toEqual([expect.stringMatching(/^ipam\.kubernetes\.kubeconfig is a node-level setting and is ignored/)]);
    // no kubeconfig on the node: ignoring it would put the call on the file store
    expectConfigError(
      () => load(netConf({ ...V4, kubernetes: { kubeconfig: "/etc/kubernetes/admin.conf" } }), { fs: memFs({}) }),
      7,
      "ipam.kubernetes.kubeconfig",
      "is a node-level setting",
      "no node flat file (looked at",
    );
    for (const key of ["etcd_cert_file", "etcd_key_file", "etcd_ca_cert_file", "etcd_username"]) {
      expectConfigError(
        () => load(netConf({ ...V4, type: "ipamkit", etcd_host: "127.0.0.1:2379", [key]: "/etc/kubernetes/pki/x" }), { fs }),
        7,
        `ipam.${key}`,
      );
    }
    // a password is never printed, not even when refused
    const error = expectConfigError(
      () => load(netConf({ ...V4, type: "ipamkit", etcd_password: "hunter2" }), { fs }),
      7,
      "ipam.etcd_password",
    );
    expect(error.message).not.toContain("hunter2");
  });

  it("etcd credentials in a Whereabouts NAD on a node whose store is Kubernetes: ignored with a warning, as Whereabouts drops them", () => {
    const kube = memFs({
      [CNI_FLAT]: { datastore: "kubernetes", kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" } },
    });
    const config = load(netConf({ ...V4, etcd_host: "10.0.0.1:2379", etcd_username: "u", etcd_password: "hunter2" }), { fs: kube });
    expect(config.datastore).toBe("kubernetes");
    const text = config.warnings.join("\n");
    expect(text).toContain('ipam.etcd_username is ignored: the store is the node\'s Kubernetes (type "whereabouts" with its kubeconfig)');
    expect(text).toContain("ipam.etcd_password is ignored");
    expect(text).not.toContain("hunter2");
    // type "ipamkit" chooses its store from the config: the credentials are still refused there
    expectConfigError(
      () => load(netConf({ ...V4, type: "ipamkit", etcd_host: "10.0.0.1:2379", etcd_username: "u" }), { fs: kube }),
      7,
      "ipam.etcd_username",
    );
  });

  it("etcd_host: the network's own, unless the node holds etcd credentials (never presented to a host a network config names)", () => {
    expect(load(netConf({ ...V4, etcd_host: "10.9.9.9:2379" })).etcd.host).toBe("10.9.9.9:2379");
    const fs = memFs({ [CNI_FLAT]: { etcd_host: "https://etcd.kube-system:2379", etcd_password: "node-pw", etcd_username: "ipam" } });
    const config = load(netConf({ ...V4, etcd_host: "http://attacker.example:2379" }), { fs });
    expect(config.etcd).toMatchObject({ host: "https://etcd.kube-system:2379", password: "node-pw" });
    expect(config.warnings).toEqual([
      expect.stringMatching(/^ipam\.etcd_host is ignored in this network config: .* holds etcd credentials/),
    ]);
    // the node's own host, repeated: silent
    expect(load(netConf({ ...V4, etcd_host: "https://etcd.kube-system:2379" }), { fs }).warnings).toEqual([]);
  });

  it("a flat file that is not the node's to trust is refused (code 7) before it is read", () => {
    const fs = { ...memFs({ [CNI_FLAT]: { agent_socket: "/run/a.sock" } }), untrusted: () => "group or others may write it (mode 0666)" };
    expectConfigError(
      () => load(netConf(V4), { fs }),
      7,
      CNI_FLAT,
      "may not hold this node's settings: group or others may write it (mode 0666)",
    );
  });
});
