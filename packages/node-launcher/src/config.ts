import { join } from "node:path";

/** The node's own folders, all under one temporary dir. */
export interface NodeLayout {
  readonly dir: string;
  readonly containerdRoot: string;
  readonly containerdState: string;
  readonly containerdSocket: string;
  readonly containerdConfig: string;
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  readonly cniCacheDir: string;
  readonly kubeletRoot: string;
  readonly kubeletCerts: string;
  readonly kubeletConfig: string;
  readonly staticPods: string;
  readonly agentDir: string;
  readonly agentSocket: string;
  readonly logs: string;
}

export function nodeLayout(dir: string): NodeLayout {
  return {
    dir,
    containerdRoot: join(dir, "containerd", "root"),
    containerdState: join(dir, "containerd", "state"),
    containerdSocket: join(dir, "containerd.sock"),
    containerdConfig: join(dir, "containerd.toml"),
    cniBinDir: join(dir, "cni", "bin"),
    cniConfDir: join(dir, "cni", "net.d"),
    cniCacheDir: join(dir, "cni", "cache"),
    kubeletRoot: join(dir, "kubelet"),
    kubeletCerts: join(dir, "kubelet-pki"),
    kubeletConfig: join(dir, "kubelet.yaml"),
    staticPods: join(dir, "manifests"),
    agentDir: join(dir, "agent"),
    agentSocket: join(dir, "agent", "agent.sock"),
    logs: join(dir, "logs"),
  };
}

/**
 * containerd 2.x (config version 3): every path under the node's dir, the locally built pause
 * image pinned as the sandbox image, `restrict_oom_score_adj` (root lacks CAP_SYS_RESOURCE here),
 * Debian's runc, and `networks` CNI networks from the node's conf dir (the first is eth0, the next eth1).
 */
export function containerdToml(layout: NodeLayout, options: { pauseRef: string; runc: string; networks?: number }): string {
  const q = JSON.stringify;
  return `version = 3
root = ${q(layout.containerdRoot)}
state = ${q(layout.containerdState)}
# no NRI socket in /var/run/nri; no btrfs/devmapper/zfs in the build
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = ${q(layout.containerdSocket)}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(layout.dir, "opt"))}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = ${q(options.pauseRef)}

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = [${q(layout.cniBinDir)}]
  conf_dir = ${q(layout.cniConfDir)}
  max_conf_num = ${options.networks ?? 1}

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = ${q(options.runc)}
`;
}

/** KubeletConfiguration (JSON is YAML): the settings real-node.md found to work on these machines. */
export function kubeletConfig(
  layout: NodeLayout,
  options: {
    statusEverySeconds: number;
    /** the node's own cgroup root (two nodes on one host); default the host's top */
    cgroupRoot?: string;
    /** the node Lease's duration (kubelet renews it at a quarter of it); default kubelet's 40 s */
    leaseSeconds?: number;
  },
): string {
  return JSON.stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    failCgroupV1: false,
    failSwapOn: false,
    cgroupDriver: "cgroupfs",
    containerRuntimeEndpoint: `unix://${layout.containerdSocket}`,
    staticPodPath: layout.staticPods,
    fileCheckFrequency: "1s",
    enableServer: false,
    readOnlyPort: 0,
    healthzPort: 0,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false } },
    authorization: { mode: "AlwaysAllow" },
    evictionHard: { "memory.available": "100Mi" },
    // nothing to pull back from: never collect an image
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    nodeStatusUpdateFrequency: `${options.statusEverySeconds}s`,
    nodeStatusReportFrequency: `${options.statusEverySeconds}s`,
    resolvConf: "",
    hairpinMode: "none",
    registerNode: true,
    podLogsDir: join(layout.dir, "pod-logs"),
    ...(options.cgroupRoot ? { cgroupRoot: options.cgroupRoot } : {}),
    ...(options.leaseSeconds ? { nodeLeaseDurationSeconds: options.leaseSeconds } : {}),
  });
}

/** The IPAM plugin a node's networks use. */
export type NodeIpam =
  /** ipamkit through its agent (the chart's pod on the node), reading the flat file the chart's installer writes */
  | { readonly type: "ipamkit"; readonly flatFile: string; readonly sticky?: boolean }
  /** Whereabouts' own binary, on the same API server, reading the flat file the launcher writes */
  | { readonly type: "whereabouts"; readonly flatFile: string };

export interface NetworkOptions {
  /** the network's name (and so the IPPool's name prefix) */
  readonly network: string;
  /** the range, e.g. 10.88.0.0/24 */
  readonly range: string;
  /** the bridge's own address (isGateway): never handed out */
  readonly gateway?: string;
  readonly ipam: NodeIpam;
}

function ipamConfig(options: NetworkOptions): Record<string, unknown> {
  const { ipam } = options;
  if (ipam.type === "whereabouts")
    // Whereabouts does not keep the gateway out of the range by itself: exclude it
    return {
      type: "whereabouts",
      range: options.range,
      ...(options.gateway ? { gateway: options.gateway, exclude: [`${options.gateway}/32`] } : {}),
      configuration_path: ipam.flatFile,
    };
  return {
    type: "ipamkit",
    range: options.range,
    ...(options.gateway ? { gateway: options.gateway } : {}),
    // no configuration_path: the flat file is a node-level setting, named in the runtime's environment
    ...(ipam.sticky ? { sticky: true } : {}),
  };
}

/**
 * The node's pod network: a bridge with isGateway. With ipamkit a CNI 1.1 conflist (so containerd
 * calls STATUS); Whereabouts v0.9.2 answers no STATUS, so its conflist says 1.0.0.
 */
export function bridgeConflist(options: NetworkOptions & { bridge: string }): string {
  return JSON.stringify(
    {
      cniVersion: options.ipam.type === "ipamkit" ? "1.1.0" : "1.0.0",
      name: options.network,
      plugins: [{ type: "bridge", bridge: options.bridge, isGateway: true, ipMasq: false, hairpinMode: false, ipam: ipamConfig(options) }],
    },
    null,
    2,
  );
}

/** A second network (the pod's eth1): macvlan in bridge mode on `master`, as Multus users attach one. */
export function macvlanConflist(options: NetworkOptions & { master: string }): string {
  return JSON.stringify(
    {
      cniVersion: options.ipam.type === "ipamkit" ? "1.1.0" : "1.0.0",
      name: options.network,
      plugins: [{ type: "macvlan", master: options.master, mode: "bridge", ipam: ipamConfig(options) }],
    },
    null,
    2,
  );
}
