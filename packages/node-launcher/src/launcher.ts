import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findWhereabouts, type KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { type AgentPod, prepareAgentPod } from "./agent-pod.js";
import { findNodeBinaries, type NodeBinaries } from "./binaries.js";
import { bridgeConflist, containerdToml, kubeletConfig, macvlanConflist, type NodeIpam, type NodeLayout, nodeLayout } from "./config.js";
import { lockHost, noteHostRestore } from "./host-lock.js";
import { type HostState, killKubepods, restoreHost, snapshotHost } from "./host-state.js";
import { buildIpamkitImage, type IpamkitImage } from "./image.js";
import { daemonsLogTail, type NodeContext, nodeCondition, nodeStopper, startContainerd, startKubelet } from "./node-daemons.js";
import { type PauseImage, pauseImage } from "./pause.js";
import { killPids, must, shimPids, until } from "./processes.js";

const REFERENCE_PLUGINS = ["bridge", "loopback", "host-local", "macvlan", "portmap"];

export interface NodeOptions {
  readonly apiserver: KubeApiserver;
  /** Default `ipamkit-node-<random>`. */
  readonly nodeName?: string;
  /** The pod network. Default 10.88.0.0/24, gateway 10.88.0.1, network `ipamkit-pods`. */
  readonly range?: string;
  readonly gateway?: string;
  readonly network?: string;
  readonly sticky?: boolean;
  /** A second network on every pod (eth1): macvlan on a veth the launcher creates. */
  readonly macvlan?: { readonly range: string; readonly network?: string };
  /** The IPAM of the node's networks. Default ipamkit (its chart's agent pod); or Whereabouts' binary. */
  readonly ipam?: "ipamkit" | "whereabouts";
  /** ipamkit's image (default: built now with scripts/build-image.sh, ~10 s). */
  readonly image?: IpamkitImage;
  /** kubelet's node status period (seconds). Default 2. */
  readonly statusEverySeconds?: number;
}

export interface RealNode {
  readonly name: string;
  readonly layout: NodeLayout;
  readonly binaries: NodeBinaries;
  readonly bridge: string;
  /** the macvlan network's master (a veth end), when the node has one */
  readonly macvlanMaster: string | undefined;
  /** the chart's agent pod (ipamkit only) */
  readonly agent: AgentPod | undefined;
  /** the host state before the node started; stop() restores it */
  readonly before: HostState;
  /** the network interfaces the node creates (restore removes them) */
  readonly links: readonly string[];
  /** crictl against this node's containerd */
  crictl(args: readonly string[]): string;
  /** creates the agent pod again (after stopAgent) and waits until it is Ready */
  startAgent(): Promise<void>;
  /** deletes the agent pod and waits until it is gone */
  stopAgent(): Promise<void>;
  /** SIGKILL kubelet, containerd, the shims and every pod process (no CNI DEL). */
  powerOff(): Promise<void>;
  /** containerd and kubelet again on the same dirs (after powerOff). */
  powerOn(): Promise<void>;
  logTail(): string;
  /** Stops everything, removes every sandbox (CNI DEL) on the way, restores the host, removes the dir. */
  stop(): Promise<void>;
}

/** The reference plugins (and Whereabouts' binary) into the node's CNI bin dir; ipamkit's installer adds its own. */
function copyPlugins(layout: NodeLayout, binaries: NodeBinaries, ipam: "ipamkit" | "whereabouts"): void {
  const files: Array<[string, string]> = REFERENCE_PLUGINS.map((p) => [join(binaries.cniPluginDir, p), p]);
  if (ipam === "whereabouts") files.push([findWhereabouts().binary, "whereabouts"]);
  for (const [from, name] of files) {
    copyFileSync(from, join(layout.cniBinDir, name));
    chmodSync(join(layout.cniBinDir, name), 0o755);
  }
}

/** The node's networks: the bridge conflist, and with `macvlan` a veth pair and a second conflist. */
function writeNetworks(
  options: NodeOptions,
  layout: NodeLayout,
  ipam: NodeIpam,
  links: { bridge: string; veth: string; peer: string },
): void {
  writeFileSync(
    join(layout.cniConfDir, "10-pods.conflist"),
    bridgeConflist({
      network: options.network ?? "ipamkit-pods",
      range: options.range ?? "10.88.0.0/24",
      gateway: options.gateway ?? "10.88.0.1",
      bridge: links.bridge,
      ipam,
    }),
  );
  if (options.macvlan === undefined) return;
  must("ip", ["link", "add", links.veth, "type", "veth", "peer", "name", links.peer]);
  for (const l of [links.veth, links.peer]) must("ip", ["link", "set", l, "up"]);
  writeFileSync(
    join(layout.cniConfDir, "20-macvlan.conflist"),
    macvlanConflist({ network: options.macvlan.network ?? "ipamkit-macvlan", range: options.macvlan.range, master: links.veth, ipam }),
  );
}

/** The node's CNI bin dir, networks and (ipamkit) image; the caller restores the host when this throws. */
function writeNodeFiles(
  options: NodeOptions,
  context: { layout: NodeLayout; binaries: NodeBinaries; dir: string; ipamType: "ipamkit" | "whereabouts" },
  net: { bridge: string; veth: string; peer: string },
): IpamkitImage | undefined {
  const { layout, binaries, dir, ipamType } = context;
  const flatFile = join(layout.cniConfDir, "whereabouts.d", "whereabouts.conf");
  const ipam: NodeIpam = ipamType === "ipamkit" ? { type: "ipamkit", flatFile, sticky: options.sticky } : { type: "whereabouts", flatFile };
  copyPlugins(layout, binaries, ipamType);
  if (ipamType === "whereabouts") {
    // what Whereabouts' installer writes: its binary insists on a flat file
    mkdirSync(join(layout.cniConfDir, "whereabouts.d"));
    writeFileSync(flatFile, JSON.stringify({ datastore: "kubernetes", kubernetes: { kubeconfig: options.apiserver.kubeconfigPath } }));
  }
  writeNetworks(options, layout, ipam, net);
  return ipamType === "ipamkit" ? (options.image ?? buildIpamkitImage(dir)) : undefined;
}

/** containerd with the images imported, kubelet, the agent pod (ipamkit); resolves once the Node is Ready. */
async function bootNode(
  node: NodeContext,
  core: CoreV1Api,
  images: { pause: PauseImage; image: IpamkitImage | undefined },
): Promise<AgentPod | undefined> {
  const { binaries, layout, name, daemons, options } = node;
  const { pause, image } = images;
  let agent: AgentPod | undefined;
  await startContainerd(node);
  const ctr = (archive: string) => must(binaries.ctr, ["--address", layout.containerdSocket, "-n", "k8s.io", "images", "import", archive]);
  ctr(pause.archive);
  if (image) ctr(image.archive);
  await startKubelet(node);
  const failed = () => daemons.kubelet?.exited() ?? daemons.containerd?.exited();
  await until(`Node ${name} registered`, 60_000, async () => (await nodeCondition(core, name)) !== "absent", failed);
  if (image) {
    agent = await prepareAgentPod({ apiserver: options.apiserver, layout, nodeName: name, image });
    await agent.start();
  }
  await until(`Node ${name} Ready`, 60_000, async () => (await nodeCondition(core, name)) === "True", failed);
  return agent;
}

/**
 * Starts a real node against `apiserver`: containerd 2.x (CRI) with the pause image and ipamkit's
 * image imported, kubelet registered as a Node, and the node's networks (a bridge, optionally a
 * macvlan as eth1) whose IPAM is ipamkit on the Kubernetes store of the same API server — its agent
 * the chart's pod on this node, whose installer puts the static binary into the node's CNI bin dir —
 * or Whereabouts' binary. Resolves once the Node is Ready.
 */
export async function startNode(options: NodeOptions): Promise<RealNode> {
  const binaries = findNodeBinaries();
  const pause = pauseImage();
  const ipamType = options.ipam ?? "ipamkit";
  const suffix = Math.random().toString(36).slice(2, 8);
  const name = options.nodeName ?? `ipamkit-node-${suffix}`;
  const net = { bridge: `ipk${suffix}`, veth: `ipkv${suffix}`, peer: `ipkw${suffix}` };
  const links = [net.bridge, ...(options.macvlan ? [net.veth, net.peer] : [])];
  const unlock = await lockHost();
  const dir = mkdtempSync("/tmp/ipamkit-node-");
  const layout = nodeLayout(dir);
  const before = snapshotHost({ nodeDir: dir, links });
  // should this process die holding the host, the next node puts the host back first
  noteHostRestore(before, { nodeDir: dir, links });
  const dirs = [layout.containerdRoot, layout.containerdState, layout.cniBinDir, layout.cniConfDir, layout.kubeletRoot, layout.staticPods];
  for (const d of [...dirs, layout.logs]) mkdirSync(d, { recursive: true });
  mkdirSync(layout.agentDir, { mode: 0o700 });
  const env = {
    ...process.env,
    PATH: `${join(binaries.containerd, "..")}:${process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin"}`,
    // the node's flat file is in its own conf dir, not a default location: the runtime names it, as
    // a node admin does in the runtime's environment (the plugin inherits it; a NAD cannot set it)
    IPAMKIT_CONFIGURATION_PATH: join(layout.cniConfDir, "whereabouts.d"),
  };
  const crictl = (args: readonly string[]) =>
    must(binaries.crictl, ["--runtime-endpoint", `unix://${layout.containerdSocket}`, "--timeout", "20s", ...args]);
  let image: IpamkitImage | undefined;
  try {
    image = writeNodeFiles(options, { layout, binaries, dir, ipamType }, net);
  } catch (error) {
    await restoreHost(before, { nodeDir: dir, links });
    rmSync(dir, { recursive: true, force: true });
    unlock();
    throw error;
  }
  writeFileSync(
    layout.containerdConfig,
    containerdToml(layout, { pauseRef: pause.ref, runc: binaries.runc, networks: options.macvlan ? 2 : 1 }),
  );
  writeFileSync(layout.kubeletConfig, kubeletConfig(layout, { statusEverySeconds: options.statusEverySeconds ?? 2 }));

  const node: NodeContext = { options, binaries, name, layout, env, daemons: {} };
  const { daemons } = node;
  const core = options.apiserver.kubeConfig.makeApiClient(CoreV1Api);
  const killShims = () => killPids(shimPids(binaries.shim, layout.containerdSocket));
  const logTail = () => daemonsLogTail(daemons);
  const stop = nodeStopper(node, { crictl, before, dir, links, unlock });
  let agent: AgentPod | undefined;
  try {
    agent = await bootNode(node, core, { pause, image });
  } catch (error) {
    const tail = logTail();
    await stop();
    throw new Error(`${(error as Error).message}\n${tail}`);
  }
  const needAgent = () => {
    if (agent === undefined) throw new Error("[node-launcher] this node runs Whereabouts: it has no ipamkit agent");
    return agent;
  };
  return {
    name,
    layout,
    binaries,
    bridge: net.bridge,
    macvlanMaster: options.macvlan ? net.veth : undefined,
    agent,
    before,
    links,
    crictl,
    startAgent: () => needAgent().start(),
    stopAgent: () => needAgent().stop(),
    async powerOff() {
      await daemons.kubelet?.kill();
      await daemons.containerd?.kill();
      killShims();
      killKubepods();
    },
    async powerOn() {
      await startContainerd(node);
      await startKubelet(node);
    },
    logTail,
    stop,
  };
}
