import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";

/**
 * A node's own view of the host's well-known paths: a private mount namespace (held open by a
 * sleeping process) in which each `target` (e.g. /etc/cni/net.d, /opt/cni/bin, /var/lib/kubelet)
 * is a bind mount of a folder of the node's. Two nodes on one host then each have their own
 * /etc/cni/net.d and /opt/cni/bin, as two machines do, so that one DaemonSet with the chart's
 * default paths serves both and NetworkAttachmentDefinitions need no per-node path. The network
 * namespace stays the host's (the nodes reach the API server on loopback).
 */
export interface MountNamespace {
  /** the holder's pid: `nsenter --target <pid> --mount` enters the namespace */
  readonly pid: number;
  /** `[command, args]` that run `command args…` inside the namespace */
  wrap(command: string, args: readonly string[]): [string, string[]];
  /** Runs a command inside the namespace to its end; throws with its stderr when it fails. */
  run(command: string, args: readonly string[]): string;
  /** Kills the holder: the namespace and every mount in it go once nothing else is inside. */
  close(): Promise<void>;
}

export interface Bind {
  /** the node's folder (created) */
  readonly source: string;
  /** the well-known path it is mounted on inside the namespace (created on the host when missing) */
  readonly target: string;
}

const SCRIPT = `set -e
while [ "$#" -gt 1 ]; do mount --bind "$1" "$2"; shift 2; done
echo ready
exec sleep infinity`;

/** Creates the namespace with its binds; resolves once every bind is in place. */
export async function openMountNamespace(binds: readonly Bind[]): Promise<MountNamespace> {
  for (const b of binds) {
    mkdirSync(b.source, { recursive: true });
    mkdirSync(b.target, { recursive: true });
  }
  const args = ["--mount", "--propagation", "private", "--", "sh", "-c", SCRIPT, "sh", ...binds.flatMap((b) => [b.source, b.target])];
  const holder: ChildProcess = spawn("unshare", args, { stdio: ["ignore", "pipe", "pipe"] });
  process.once("exit", () => holder.kill("SIGKILL"));
  let stderr = "";
  holder.stderr?.on("data", (d) => {
    stderr += String(d);
  });
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.once("data", () => resolve());
    holder.once("exit", (code) => reject(new Error(`[node-launcher] the node's mount namespace failed (${code}): ${stderr.trim()}`)));
  });
  const pid = holder.pid ?? 0;
  const wrap = (command: string, cmdArgs: readonly string[]): [string, string[]] => [
    "nsenter",
    [`--target=${pid}`, "--mount", "--", command, ...cmdArgs],
  ];
  return {
    pid,
    wrap,
    run(command, cmdArgs) {
      const [c, a] = wrap(command, cmdArgs);
      const r = spawnSync(c, a, { encoding: "utf8", timeout: 120_000 });
      if (r.status !== 0)
        throw new Error(
          `[node-launcher] ${command} ${cmdArgs.join(" ")} in the node failed (${r.status}): ${(r.stderr ?? "").trim().slice(-800)}`,
        );
      return r.stdout.trim();
    },
    async close() {
      if (holder.exitCode !== null || holder.signalCode !== null) return;
      const done = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
      holder.kill("SIGKILL");
      await done;
    },
  };
}
