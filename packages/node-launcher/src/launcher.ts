import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api } from "@kubernetes/client-node";
import { findNodeBinaries, type NodeBinaries } from "./binaries.js";
import { conflist, containerdToml, kubeletConfig, type NodeLayout, nodeLayout } from "./config.js";
import { lockHost } from "./host-lock.js";
import { type HostState, killKubepods, restoreHost, snapshotHost } from "./host-state.js";
import { pauseImage } from "./pause.js";
import { type Daemon, killPids, must, shimPids, startDaemon, until } from "./processes.js";

/** The built plugin (static binary) and agent this node runs on the host. */
export const PLUGIN_DIST = fileURLToPath(new URL("../../../examples/cni-plugin/dist/", import.meta.url));
const PLUGIN_FILES = [
  "ipamkit",
  "ipamkit-agent",
  "ipamkit-node",
  "ipamkit-kubernetes.cjs",
  "ipamkit-kubernetes.cjs.v8cache",
  "ipamkit-direct.cjs",
  "package.json",
];

export interface NodeOptions {
  readonly apiserver: KubeApiserver;
  /** Default `ipamkit-node-<random>`. */
  readonly nodeName?: string;
  /** The pod network. Default 10.88.0.0/24, gateway 10.88.0.1, network `ipamkit-pods`. */
  readonly range?: string;
  readonly gateway?: string;
  readonly network?: string;
  readonly sticky?: boolean;
  /** kubelet's node status period (seconds). Default 2. */
  readonly statusEverySeconds?: number;
}

export interface RealNode {
  readonly name: string;
  readonly layout: NodeLayout;
  readonly binaries: NodeBinaries;
  readonly bridge: string;
  /** the host state before the node started; stop() restores it */
  readonly before: HostState;
  /** crictl against this node's containerd */
  crictl(args: readonly string[]): string;
  startAgent(): Promise<void>;
  stopAgent(): Promise<void>;
  /** SIGKILL kubelet, containerd, the shims and every pod process (no CNI DEL). */
  powerOff(): Promise<void>;
  /** containerd and kubelet again on the same dirs (after powerOff). */
  powerOn(): Promise<void>;
  logTail(): string;
  /** Stops everything, removes every sandbox (CNI DEL) on the way, restores the host, removes the dir. */
  stop(): Promise<void>;
}

function copyPlugin(layout: NodeLayout, binaries: NodeBinaries): string {
  const missing = PLUGIN_FILES.filter((f) => !existsSync(join(PLUGIN_DIST, f)));
  if (missing.length > 0)
    throw new Error(
      `[node-launcher] ${PLUGIN_DIST} lacks ${missing.join(", ")} — run pnpm turbo run build --filter=@ipamkit/example-cni-plugin`,
    );
  const agentDist = join(layout.dir, "ipamkit");
  mkdirSync(agentDist);
  for (const f of PLUGIN_FILES) copyFileSync(join(PLUGIN_DIST, f), join(agentDist, f));
  copyFileSync(join(PLUGIN_DIST, "ipamkit"), join(layout.cniBinDir, "ipamkit"));
  chmodSync(join(layout.cniBinDir, "ipamkit"), 0o755);
  for (const p of ["bridge", "loopback", "host-local", "macvlan", "portmap"])
    copyFileSync(join(binaries.cniPluginDir, p), join(layout.cniBinDir, p));
  for (const p of ["bridge", "loopback", "host-local", "macvlan", "portmap"]) chmodSync(join(layout.cniBinDir, p), 0o755);
  return join(agentDist, "ipamkit-agent");
}

/**
 * Starts a real node against `apiserver`: containerd 2.x (CRI) with the pause image imported,
 * kubelet registered as a Node, the ipamkit agent on the host, and a CNI 1.1 conflist (bridge +
 * ipamkit on the Kubernetes store of the same API server). Resolves once the Node is Ready.
 */
export async function startNode(options: NodeOptions): Promise<RealNode> {
  const binaries = findNodeBinaries();
  const pause = pauseImage();
  const suffix = Math.random().toString(36).slice(2, 8);
  const name = options.nodeName ?? `ipamkit-node-${suffix}`;
  const bridge = `ipk${suffix}`;
  const unlock = await lockHost();
  const dir = mkdtempSync("/tmp/ipamkit-node-");
  const layout = nodeLayout(dir);
  const before = snapshotHost({ nodeDir: dir, links: [bridge] });
  for (const d of [
    layout.containerdRoot,
    layout.containerdState,
    layout.cniBinDir,
    layout.cniConfDir,
    layout.kubeletRoot,
    layout.staticPods,
    layout.logs,
  ])
    mkdirSync(d, { recursive: true });
  mkdirSync(layout.agentDir, { mode: 0o700 });
  let agent: Daemon | undefined;
  let containerd: Daemon | undefined;
  let kubelet: Daemon | undefined;
  const env = { ...process.env, PATH: `${join(binaries.containerd, "..")}:${process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin"}` };
  const crictl = (args: readonly string[]) =>
    must(binaries.crictl, ["--runtime-endpoint", `unix://${layout.containerdSocket}`, "--timeout", "20s", ...args]);
  const agentBin = (() => {
    try {
      return copyPlugin(layout, binaries);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      unlock();
      throw error;
    }
  })();
  writeFileSync(
    join(layout.cniConfDir, "10-ipamkit.conflist"),
    conflist(layout, {
      network: options.network ?? "ipamkit-pods",
      range: options.range ?? "10.88.0.0/24",
      gateway: options.gateway ?? "10.88.0.1",
      bridge,
      kubeconfig: options.apiserver.kubeconfigPath,
      sticky: options.sticky,
    }),
  );
  writeFileSync(layout.containerdConfig, containerdToml(layout, { pauseRef: pause.ref, runc: binaries.runc }));
  writeFileSync(layout.kubeletConfig, kubeletConfig(layout, { statusEverySeconds: options.statusEverySeconds ?? 2 }));

  const startAgent = async () => {
    if (agent?.exited() === undefined && agent !== undefined) return;
    const a = startDaemon({
      name: "agent",
      command: process.execPath,
      args: [agentBin, "--socket", layout.agentSocket, "--node-name", name],
      logs: layout.logs,
    });
    agent = a;
    await until("the agent's socket", 30_000, () => existsSync(layout.agentSocket), a.exited);
  };
  const startContainerd = async () => {
    // a killed containerd leaves its socket behind: wait for the new one, not the stale file
    rmSync(layout.containerdSocket, { force: true });
    const c = startDaemon({
      name: "containerd",
      command: binaries.containerd,
      args: ["--config", layout.containerdConfig],
      logs: layout.logs,
      env,
    });
    containerd = c;
    await until("containerd's socket", 30_000, () => existsSync(layout.containerdSocket), c.exited);
  };
  const startKubelet = async () => {
    kubelet = startDaemon({
      name: "kubelet",
      command: binaries.kubelet,
      args: [
        `--config=${layout.kubeletConfig}`,
        `--kubeconfig=${options.apiserver.kubeconfigPath}`,
        `--root-dir=${layout.kubeletRoot}`,
        `--cert-dir=${layout.kubeletCerts}`,
        `--hostname-override=${name}`,
        "--v=1",
      ],
      logs: layout.logs,
      env,
    });
  };
  const core = options.apiserver.kubeConfig.makeApiClient(CoreV1Api);
  const nodeReady = async () => {
    try {
      const node = await core.readNode({ name });
      return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
    } catch {
      return false;
    }
  };
  const killShims = () => killPids(shimPids(binaries.shim, layout.containerdSocket));
  const logTail = () => [agent, containerd, kubelet].map((d) => (d ? `--- ${d.name}\n${d.logTail(15)}` : "")).join("\n");

  let stopped = false;
  const stop = async () => {
    // a second stop() must not restore again: another node may hold the host by then
    if (stopped) return;
    stopped = true;
    await kubelet?.stop();
    if (containerd?.exited() === undefined && containerd !== undefined) {
      // every sandbox torn down through CRI, so that the CNI chain gets its DEL
      try {
        crictl(["rmp", "--all", "--force"]);
      } catch {
        // the restore below still removes what is left
      }
    }
    await containerd?.stop();
    killShims();
    await agent?.stop();
    try {
      await restoreHost(before, { nodeDir: dir, links: [bridge] });
      rmSync(dir, { recursive: true, force: true });
    } finally {
      unlock();
    }
  };
  try {
    await startAgent();
    await startContainerd();
    must(binaries.ctr, ["--address", layout.containerdSocket, "-n", "k8s.io", "images", "import", pause.archive]);
    await startKubelet();
    await until(`Node ${name} Ready`, 60_000, nodeReady, () => kubelet?.exited() ?? containerd?.exited());
  } catch (error) {
    const tail = logTail();
    await stop();
    throw new Error(`${(error as Error).message}\n${tail}`);
  }
  return {
    name,
    layout,
    binaries,
    bridge,
    before,
    crictl,
    startAgent,
    stopAgent: async () => agent?.stop(),
    async powerOff() {
      await kubelet?.kill();
      await containerd?.kill();
      killShims();
      killKubepods();
    },
    async powerOn() {
      await startContainerd();
      await startKubelet();
    },
    logTail,
    stop,
  };
}
