import { existsSync, rmSync } from "node:fs";
import type { CoreV1Api } from "@kubernetes/client-node";
import type { NodeBinaries } from "./binaries.js";
import type { NodeLayout } from "./config.js";
import { type HostState, killKubepods, restoreHost } from "./host-state.js";
import type { NodeOptions } from "./launcher.js";
import { type Daemon, killPids, shimPids, startDaemon, until } from "./processes.js";

/** The node's daemons as they are now (powerOff/powerOn replace them). */
export interface Daemons {
  containerd?: Daemon;
  kubelet?: Daemon;
}

/** What the node's phases share. */
export interface NodeContext {
  readonly options: NodeOptions;
  readonly binaries: NodeBinaries;
  readonly name: string;
  readonly layout: NodeLayout;
  readonly env: NodeJS.ProcessEnv;
  readonly daemons: Daemons;
}

export async function startContainerd(node: NodeContext): Promise<void> {
  const { layout } = node;
  // a killed containerd leaves its socket behind: wait for the new one, not the stale file
  rmSync(layout.containerdSocket, { force: true });
  const c = startDaemon({
    name: "containerd",
    command: node.binaries.containerd,
    args: ["--config", layout.containerdConfig],
    logs: layout.logs,
    env: node.env,
  });
  node.daemons.containerd = c;
  await until("containerd's socket", 30_000, () => existsSync(layout.containerdSocket), c.exited);
}

export async function startKubelet(node: NodeContext): Promise<void> {
  const { layout } = node;
  node.daemons.kubelet = startDaemon({
    name: "kubelet",
    command: node.binaries.kubelet,
    args: [
      `--config=${layout.kubeletConfig}`,
      `--kubeconfig=${node.options.apiserver.kubeconfigPath}`,
      `--root-dir=${layout.kubeletRoot}`,
      `--cert-dir=${layout.kubeletCerts}`,
      `--hostname-override=${node.name}`,
      "--v=1",
    ],
    logs: layout.logs,
    env: node.env,
  });
}

/** The Node's Ready condition: "True", "False", "Unknown", or "absent" while it is not registered. */
export async function nodeCondition(core: CoreV1Api, name: string): Promise<string> {
  try {
    const node = await core.readNode({ name });
    return node.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "Unknown";
  } catch {
    return "absent";
  }
}

export const daemonsLogTail = (daemons: Daemons) =>
  [daemons.containerd, daemons.kubelet].map((d) => (d ? `--- ${d.name}\n${d.logTail(15)}` : "")).join("\n");

export function removeSandboxes(crictl: (args: readonly string[]) => string): void {
  // the app pods first, while the agent still answers their DEL; then the agent's own pod
  try {
    const pods = JSON.parse(crictl(["pods", "-o", "json"])) as { items?: { id: string; labels?: Record<string, string> }[] };
    const apps = (pods.items ?? []).filter((p) => p.labels?.["app.kubernetes.io/name"] !== "ipamkit-node").map((p) => p.id);
    if (apps.length > 0) crictl(["rmp", "--force", ...apps]);
    crictl(["rmp", "--all", "--force"]);
  } catch {
    // the restore below still removes what is left
  }
}

/** The node's stop(): once only, the sandboxes removed while containerd runs, then the host restored and unlocked. */
export function nodeStopper(
  node: NodeContext,
  host: { crictl: (args: readonly string[]) => string; before: HostState; dir: string; links: readonly string[]; unlock: () => void },
): () => Promise<void> {
  const { daemons } = node;
  let stopped = false;
  return async () => {
    // a second stop() must not restore again: another node may hold the host by then
    if (stopped) return;
    stopped = true;
    await daemons.kubelet?.stop();
    if (daemons.containerd?.exited() === undefined && daemons.containerd !== undefined) removeSandboxes(host.crictl);
    await daemons.containerd?.stop();
    killPids(shimPids(node.binaries.shim, node.layout.containerdSocket));
    killKubepods();
    try {
      await restoreHost(host.before, { nodeDir: host.dir, links: host.links });
      rmSync(host.dir, { recursive: true, force: true });
    } finally {
      host.unlock();
    }
  };
}
