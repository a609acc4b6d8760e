/** What server.test.ts and server.raw-frame.test.ts share: the agent's temp dir, the CNI call it serves, raw socket calls. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostConfigFs } from "@ipamkit/cni";

/** A fresh dir holding an empty flat config (whereabouts.conf: the node's, see nodeFs), and the agent's socket path in it (not created yet). */
export function makeAgentDir(): { dir: string; socketPath: string } {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-agent-"));
  writeFileSync(join(dir, "whereabouts.conf"), "{}");
  return { dir, socketPath: join(dir, "run", "agent.sock") };
}

/** The network config of a call: its store in `dir`, `ipam` overriding. */
export const confIn = (dir: string, ipam: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion: "1.1.0",
    name: "net",
    ipam: { type: "ipamkit", range: "10.30.0.0/24", data_dir: join(dir, "store"), ...ipam },
  });

/** The agent's view of the node: its flat file is `dir`'s (IPAMKIT_CONFIGURATION_PATH, as the chart would set it). */
export const nodeFs = (dir: string) => hostConfigFs({ env: { IPAMKIT_CONFIGURATION_PATH: dir }, euid: process.geteuid?.() ?? 0 });

export const env = (command: string, containerId = "c1") => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: containerId,
  CNI_IFNAME: "net1",
  CNI_NETNS: "/x",
  CNI_PATH: "/x",
});

/** Raw request bytes → the raw answer. */
export function rawCallTo(socketPath: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = "";
    socket.on("data", (d) => (answer += d));
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
    socket.end(bytes);
  });
}
