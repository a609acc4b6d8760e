import { spawn } from "node:child_process";
import { PLUGIN, quantile } from "./cni.js";

/** The CNI processes of the SIGKILL campaign (src/kill-campaign.ts): how each is run, and when it is killed. */

/** The namespace of the campaign's pods. */
export const NS = "kill";

export interface Attachment {
  id: number;
  uid: string;
  /** Addresses of its acknowledged ADD. */
  ips?: string[];
  state: "live" | "dead" | "pending";
  /** The command a SIGKILL cut short. */
  killedIn?: "ADD" | "DEL";
}

/**
 * Kill moments relative to the median of recent uncut calls of that command under the campaign's
 * own concurrency (a window measured once, alone, is too short once 4 processes share 2 cores: every
 * kill then lands before the store is touched). Half are drawn from the whole call (0–1.3 × median);
 * half from its end (0.6–1.1 ×), where a process does its store work after Node's start-up.
 */
export class KillWindow {
  private readonly recent: Record<"ADD" | "DEL", number[]> = { ADD: [], DEL: [] };
  record(command: "ADD" | "DEL", ms: number): void {
    const xs = this.recent[command];
    xs.push(ms);
    if (xs.length > 16) xs.shift();
  }
  draw(command: "ADD" | "DEL", random: () => number): number {
    // the calibration ADDs come first, so there is always a sample
    const median = quantile(this.recent[command].length > 0 ? this.recent[command] : this.recent.ADD, 0.5);
    return random() < 0.5 ? random() * 1.3 * median : (0.6 + random() * 0.5) * median;
  }
}

function env(command: string, a: Attachment, conf: string): Record<string, string> {
  // the node's flat file, as its runtime would name it (the config's configuration_path)
  const node = (JSON.parse(conf) as { ipam?: { configuration_path?: unknown } }).ipam?.configuration_path;
  return {
    ...(typeof node === "string" ? { IPAMKIT_CONFIGURATION_PATH: node } : {}),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    CNI_COMMAND: command,
    CNI_CONTAINERID: `kc-${a.id}`,
    CNI_IFNAME: "net1",
    CNI_NETNS: `/var/run/netns/kc-${a.id}`,
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=kp-${a.id};K8S_POD_UID=${a.uid}`,
  };
}

/** Runs the binary; kills it after `killAfterMs` unless it finished. */
export function run(command: string, a: Attachment, conf: string, killAfterMs: number | undefined) {
  return new Promise<{ killed: boolean; code: number | null; out: string; ms: number }>((resolve) => {
    const started = performance.now();
    const child = spawn(PLUGIN, [], { env: env(command, a, conf), stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    // "close", not "exit": a process's exit can be seen before the last bytes of its stdout (a CI run
    // under load read an uncut ADD's answer as empty); the binary execs Node in place, so a killed
    // call leaves no process holding the pipe open
    child.on("close", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ killed: signal === "SIGKILL", code, out, ms: performance.now() - started });
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(conf);
  });
}

/** The addresses (without prefix length) of an ADD's answer. */
export function addressesOf(out: string): string[] {
  return (JSON.parse(out) as { ips: { address: string }[] }).ips.map((ip) => ip.address.split("/")[0] ?? "");
}
