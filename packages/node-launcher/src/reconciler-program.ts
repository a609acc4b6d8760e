import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";

/** The reconciler program the image ships (examples/cron-reconciler), as built. */
export const RECONCILER = fileURLToPath(new URL("../../../examples/cron-reconciler/dist/main.js", import.meta.url));

function needBuilt(): void {
  if (!existsSync(RECONCILER))
    throw new Error(`${RECONCILER} is not built — run pnpm turbo run build --filter=@ipamkit/example-cron-reconciler`);
}

/** No grace for young reservations, no settle time for audit findings: the tests choose the moment. */
const PROMPT = ["--grace", "0s", "--claim-settle", "0s"];

/** `--once` against the API server with the admin kubeconfig; resolves with its exit code and output. */
export function reconcileOnce(apiserver: KubeApiserver, extra: readonly string[] = []): { status: number; output: string } {
  needBuilt();
  const r = spawnSync(process.execPath, [RECONCILER, "--once", "--kubeconfig", apiserver.kubeconfigPath, ...PROMPT, ...extra], {
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

export interface WatchingReconciler {
  /** what it logged so far */
  output(): string;
  stop(): Promise<void>;
}

/** `--watch` (a pod-deletion controller with a full pass at start and every `resync`), no leader election. */
export function startReconcilerWatch(apiserver: KubeApiserver, resync = "10s"): WatchingReconciler {
  needBuilt();
  const child: ChildProcess = spawn(
    process.execPath,
    [RECONCILER, "--watch", "--resync", resync, "--leader-election", "false", "--kubeconfig", apiserver.kubeconfigPath, ...PROMPT],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  process.once("exit", () => child.kill("SIGKILL"));
  let output = "";
  child.stdout?.on("data", (d) => {
    output += String(d);
  });
  child.stderr?.on("data", (d) => {
    output += String(d);
  });
  return {
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      await done;
    },
  };
}
