import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import type { CoreV1Api } from "@kubernetes/client-node";
import type { NodeBinaries } from "./binaries.js";
import type { ClusterBinaries } from "./cluster-binaries.js";
import { containerdToml, kubeletConfig, type NodeLayout } from "./config.js";
import { killKubepods, makeCgroupRoot, NODE_CGROUP_PREFIX } from "./host-state.js";
import { type Bind, type MountNamespace, openMountNamespace } from "./mount-namespace.js";
import { multusConf } from "./multus.js";
import { nodeCondition, removeSandboxes } from "./node-daemons.js";
import { type Daemon, killPids, must, shimPidsInMountNamespace, startDaemon, until } from "./processes.js";

const REFERENCE_PLUGINS = ["bridge", "loopback", "host-local", "macvlan", "portmap"];

/**
 * Inside a cluster node's mount namespace the well-known paths are the node's own folders
 * (/var/lib/ipamkit holds the DEL journal, the chart's agent.journalDir)…
 */
const PERSISTENT = [
  "/etc/cni/net.d",
  "/opt/cni/bin",
  "/var/lib/cni",
  "/var/lib/kubelet",
  "/var/lib/containerd",
  "/var/lib/ipamkit",
  "/var/log/pods",
];
/** …and these are emptied by a power-off, as a reboot empties /run. */
const VOLATILE = ["/run/containerd", "/run/netns", "/run/ipamkit"];
const CONTAINERD_SOCKET = "/run/containerd/containerd.sock";

export interface ClusterNodeOptions {
  readonly apiserver: KubeApiserver;
  readonly name: string;
  /** the node's folder: its "disk" (persistent paths), logs and configs */
  readonly dir: string;
  readonly binaries: NodeBinaries;
  readonly cluster: ClusterBinaries;
  /** OCI archives imported into the node's containerd (the pause image first) */
  readonly images: readonly string[];
  readonly pauseRef: string;
  /** the node's pod network (Multus' delegate): a bridge of this name with this /24 */
  readonly podNetwork: { readonly bridge: string; readonly subnet: string };
  /** files written into the node's /etc/cni/net.d before it starts (path relative to it → content) */
  readonly cniFiles?: Record<string, string>;
  /** binaries copied into the node's /opt/cni/bin (name → source) besides the reference plugins and Multus */
  readonly cniBinaries?: Record<string, string>;
  readonly statusEverySeconds?: number;
  readonly leaseSeconds?: number;
}

export interface ClusterNode {
  readonly name: string;
  readonly dir: string;
  /** the node's kubelet cgroup root (top level of every hierarchy) */
  readonly cgroupRoot: string;
  /** the host path of a path as the node sees it (e.g. /etc/cni/net.d → <dir>/fs/etc/cni/net.d) */
  hostPath(inNode: string): string;
  /** crictl against this node's containerd */
  crictl(args: readonly string[]): string;
  /**
   * The ids of the node's NotReady sandboxes in `namespace`: the dead ones a power-off left. The
   * kubelet removes each only after StopPodSandbox succeeded, i.e. after the whole CNI DEL chain
   * (Multus, its delegates, their IPAM) answered success.
   */
  deadSandboxes(namespace: string): string[];
  /** imports an OCI archive into the node's containerd (as a registry pull would bring it) */
  importImage(archive: string): void;
  /** runs a command inside the node's mount namespace */
  run(command: string, args: readonly string[]): string;
  /** SIGKILL kubelet, containerd, the shims and the node's pods; /run emptied (no CNI DEL) */
  powerOff(): Promise<void>;
  /** boots again on the same disk: containerd finds its dead sandboxes, kubelet cleans them up */
  powerOn(): Promise<void>;
  logTail(): string;
  /** app sandboxes removed (CNI DEL) before the node's own, then everything stopped; host untouched */
  stop(): Promise<void>;
}

/** The in-namespace layout (what containerd and kubelet are told) with the node's own logs and configs. */
function layoutOf(dir: string): NodeLayout {
  return {
    dir,
    containerdRoot: "/var/lib/containerd",
    containerdState: "/run/containerd",
    containerdSocket: CONTAINERD_SOCKET,
    containerdConfig: join(dir, "containerd.toml"),
    cniBinDir: "/opt/cni/bin",
    cniConfDir: "/etc/cni/net.d",
    cniCacheDir: "/var/lib/cni",
    kubeletRoot: "/var/lib/kubelet",
    kubeletCerts: join(dir, "kubelet-pki"),
    kubeletConfig: join(dir, "kubelet.yaml"),
    staticPods: join(dir, "manifests"),
    agentDir: "/run/ipamkit",
    agentSocket: "/run/ipamkit/agent.sock",
    logs: join(dir, "logs"),
  };
}

/** The node's "disk": the reference plugins, Multus and its config, and the caller's files. */
function writeDisk(options: ClusterNodeOptions, hostPath: (p: string) => string): void {
  const { binaries, cluster } = options;
  for (const p of [...PERSISTENT, ...VOLATILE]) mkdirSync(hostPath(p), { recursive: true });
  const bins: Record<string, string> = {
    ...Object.fromEntries(REFERENCE_PLUGINS.map((p) => [p, join(binaries.cniPluginDir, p)])),
    multus: cluster.multus,
    ...options.cniBinaries,
  };
  for (const [name, from] of Object.entries(bins)) {
    copyFileSync(from, join(hostPath("/opt/cni/bin"), name));
    chmodSync(join(hostPath("/opt/cni/bin"), name), 0o755);
  }
  const files: Record<string, string> = {
    "00-multus.conf": multusConf({ ...options.podNetwork, logFile: join(options.dir, "logs", "multus.log") }),
    "multus.d/multus.kubeconfig": "",
    ...options.cniFiles,
  };
  for (const [path, content] of Object.entries(files)) {
    const file = join(hostPath("/etc/cni/net.d"), path);
    mkdirSync(join(file, ".."), { recursive: true });
    if (path === "multus.d/multus.kubeconfig") copyFileSync(options.apiserver.kubeconfigPath, file);
    else writeFileSync(file, content);
  }
}

/**
 * A real node of a cluster: containerd 2.x and kubelet in a private mount namespace of their own
 * (so that each node has its own /etc/cni/net.d, /opt/cni/bin, /var/lib/kubelet and /run), in the
 * host's network namespace, in a cgroup root of their own. Its primary CNI config is Multus'
 * thin plugin, delegating the pod network to a bridge with host-local IPAM; the NADs Multus reads
 * name the secondary networks. Resolves once the Node is registered (not yet Ready: that may wait
 * for a DaemonSet's pod).
 */
export async function startClusterNode(options: ClusterNodeOptions, core: CoreV1Api): Promise<ClusterNode> {
  const { dir, name, binaries } = options;
  const layout = layoutOf(dir);
  const hostPath = (p: string) => join(dir, "fs", p);
  const cgroupRoot = `${NODE_CGROUP_PREFIX}${name}`;
  mkdirSync(layout.logs, { recursive: true });
  mkdirSync(layout.staticPods, { recursive: true });
  writeDisk(options, hostPath);
  writeFileSync(layout.containerdConfig, containerdToml(layout, { pauseRef: options.pauseRef, runc: binaries.runc }));
  writeFileSync(
    layout.kubeletConfig,
    kubeletConfig(layout, {
      statusEverySeconds: options.statusEverySeconds ?? 2,
      cgroupRoot: `/${cgroupRoot}`,
      leaseSeconds: options.leaseSeconds ?? 10,
    }),
  );
  makeCgroupRoot(cgroupRoot);
  const binds: Bind[] = [...PERSISTENT, ...VOLATILE].map((p) => ({ source: hostPath(p), target: p }));
  const env = { ...process.env, PATH: `${join(binaries.containerd, "..")}:${process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin"}` };
  const socket = hostPath(CONTAINERD_SOCKET);
  const crictl = (args: readonly string[]) =>
    must(binaries.crictl, ["--runtime-endpoint", `unix://${socket}`, "--timeout", "20s", ...args]);
  let ns: MountNamespace | undefined;
  let daemons: Daemon[] = [];
  const boot = async () => {
    ns = await openMountNamespace(binds);
    const [cc, ca] = ns.wrap(binaries.containerd, ["--config", layout.containerdConfig]);
    const containerd = startDaemon({ name: "containerd", command: cc, args: ca, logs: layout.logs, env });
    daemons = [containerd];
    await until(
      "containerd's socket",
      30_000,
      () => readdirSync(hostPath("/run/containerd")).includes("containerd.sock"),
      containerd.exited,
    );
    for (const archive of options.images) must(binaries.ctr, ["--address", socket, "-n", "k8s.io", "images", "import", archive]);
    const [kc, ka] = ns.wrap(binaries.kubelet, [
      `--config=${layout.kubeletConfig}`,
      `--kubeconfig=${options.apiserver.kubeconfigPath}`,
      `--root-dir=${layout.kubeletRoot}`,
      `--cert-dir=${layout.kubeletCerts}`,
      `--hostname-override=${name}`,
      "--v=1",
    ]);
    daemons.push(startDaemon({ name: "kubelet", command: kc, args: ka, logs: layout.logs, env }));
    const failed = () => daemons.map((d) => d.exited()).find((why) => why !== undefined);
    await until(`Node ${name} registered`, 60_000, async () => (await nodeCondition(core, name)) !== "absent", failed);
  };
  const halt = async (graceful: boolean) => {
    const [containerd, kubelet] = daemons;
    if (graceful) {
      await kubelet?.stop();
      if (containerd !== undefined && containerd.exited() === undefined) removeSandboxes(crictl);
      await containerd?.stop();
    } else {
      await kubelet?.kill();
      await containerd?.kill();
    }
    if (ns !== undefined) killPids(shimPidsInMountNamespace(binaries.shim, ns.pid));
    killKubepods(cgroupRoot);
    await ns?.close();
    ns = undefined;
    // a reboot: /run is empty again
    for (const p of VOLATILE) {
      rmSync(hostPath(p), { recursive: true, force: true });
      mkdirSync(hostPath(p), { recursive: true });
    }
  };
  await boot();
  let stopped = false;
  return {
    name,
    dir,
    cgroupRoot,
    hostPath,
    crictl,
    deadSandboxes: (namespace) => crictl(["pods", "--namespace", namespace, "--state", "notready", "-q"]).split("\n").filter(Boolean),
    importImage: (archive) => {
      must(binaries.ctr, ["--address", socket, "-n", "k8s.io", "images", "import", archive]);
    },
    run(command, args) {
      if (ns === undefined) throw new Error(`[node-launcher] node ${name} is off`);
      return ns.run(command, args);
    },
    powerOff: () => halt(false),
    powerOn: boot,
    logTail: () => daemons.map((d) => `--- ${name} ${d.name}\n${d.logTail(15)}`).join("\n"),
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt(true);
    },
  };
}
