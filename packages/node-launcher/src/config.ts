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
 * Debian's runc, and one CNI network from the node's conf dir.
 */
export function containerdToml(layout: NodeLayout, options: { pauseRef: string; runc: string }): string {
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
  max_conf_num = 1

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = ${q(options.runc)}
`;
}

/** KubeletConfiguration (JSON is YAML): the settings real-node.md found to work on these machines. */
export function kubeletConfig(layout: NodeLayout, options: { statusEverySeconds: number }): string {
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
  });
}

export interface IpamOptions {
  /** the network's name (and so the IPPool's name prefix) */
  readonly network: string;
  /** the pod range, e.g. 10.88.0.0/24; its first address is the bridge's gateway */
  readonly range: string;
  readonly gateway: string;
  readonly bridge: string;
  /** the kubeconfig the plugin and agent reach the API server with */
  readonly kubeconfig: string;
  readonly sticky?: boolean;
}

/** A CNI 1.1 conflist (so containerd calls STATUS): bridge with isGateway, its IPAM ipamkit on the Kubernetes store, through the agent only. */
export function conflist(layout: NodeLayout, ipam: IpamOptions): string {
  return JSON.stringify(
    {
      cniVersion: "1.1.0",
      name: ipam.network,
      plugins: [
        {
          type: "bridge",
          bridge: ipam.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: false,
          ipam: {
            type: "ipamkit",
            range: ipam.range,
            gateway: ipam.gateway,
            kubernetes: { kubeconfig: ipam.kubeconfig },
            agent_socket: layout.agentSocket,
            agent_required: true,
            ...(ipam.sticky ? { sticky: true } : {}),
            configuration_path: join(layout.dir, "no-flat-file"),
          },
        },
      ],
    },
    null,
    2,
  );
}
