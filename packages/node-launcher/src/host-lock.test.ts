import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { HOST_LOCK, lockHost, noteHostRestore } from "./host-lock.js";
import { restoreHost, snapshotHost } from "./host-state.js";

const sh = (command: string, args: string[]) => {
  const r = spawnSync(command, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${r.stderr}`);
};

it("a lock whose holder died is taken over after what the holder noted is put back", async () => {
  let release = await lockHost();
  const nodeDir = mkdtempSync("/tmp/ipamkit-lock-test-");
  const links = ["ipklocktst"];
  const before = snapshotHost({ nodeDir, links });
  const panic = readFileSync("/proc/sys/kernel/panic", "utf8").trim();
  try {
    // a holder that noted its restore, changed the host, and died (its pid no longer runs)
    noteHostRestore(before, { nodeDir, links });
    const dead = spawnSync("true").pid;
    writeFileSync(join(HOST_LOCK, "pid"), String(dead));
    sh("iptables", ["-w", "-N", "KUBE-IPAMKIT-LOCK-TEST"]);
    writeFileSync("/proc/sys/kernel/panic", panic === "10" ? "11" : "10");
    sh("ip", ["link", "add", "ipklocktst", "type", "bridge"]);
    expect(snapshotHost({ nodeDir, links })).not.toEqual(before);

    release = await lockHost(10_000);
    expect(snapshotHost({ nodeDir, links })).toEqual(before);
    expect(readFileSync(join(HOST_LOCK, "pid"), "utf8")).toBe(String(process.pid));
    expect(existsSync(nodeDir)).toBe(false);
  } finally {
    await restoreHost(before, { nodeDir, links });
    rmSync(nodeDir, { recursive: true, force: true });
    release();
  }
});
