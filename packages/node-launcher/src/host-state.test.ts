import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { lockHost } from "./host-lock.js";
import { restoreHost, snapshotHost } from "./host-state.js";

const sh = (command: string, args: string[]) => {
  const r = spawnSync(command, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${r.stderr}`);
};

it("restoreHost undoes what a node does to the host: chains, cgroups, mounts, sysctls, paths, links", async () => {
  const unlock = await lockHost();
  const nodeDir = mkdtempSync("/tmp/ipamkit-restore-test-");
  const links = ["ipkrestoretst"];
  const before = snapshotHost({ nodeDir, links });
  expect(before.paths["/var/lib/kubelet"]).toBe(false);
  const panic = readFileSync("/proc/sys/kernel/panic", "utf8").trim();
  try {
    // what kubelet, containerd and the bridge plugin do, in small
    sh("iptables", ["-w", "-N", "KUBE-IPAMKIT-RESTORE-TEST"]);
    sh("iptables", ["-w", "-A", "KUBE-IPAMKIT-RESTORE-TEST", "-s", "192.0.2.1/32", "-j", "RETURN"]);
    sh("iptables", ["-w", "-A", "OUTPUT", "-d", "192.0.2.1/32", "-j", "KUBE-IPAMKIT-RESTORE-TEST"]);
    mkdirSync("/sys/fs/cgroup/pids/kubepods-ipamkit-restore-test/child", { recursive: true });
    mkdirSync(join(nodeDir, "mnt"));
    sh("mount", ["-t", "tmpfs", "tmpfs", join(nodeDir, "mnt")]);
    mkdirSync("/var/lib/kubelet/device-plugins", { recursive: true });
    writeFileSync("/proc/sys/kernel/panic", panic === "10" ? "11" : "10");
    sh("ip", ["link", "add", "ipkrestoretst", "type", "bridge"]);

    const during = snapshotHost({ nodeDir, links });
    expect(during.iptables.filter((l) => l.includes("KUBE-IPAMKIT-RESTORE-TEST"))).toHaveLength(3);
    expect(during.cgroups).toContain("/sys/fs/cgroup/pids/kubepods-ipamkit-restore-test");
    expect(during.mounts).toContain(join(nodeDir, "mnt"));
    expect(during.paths["/var/lib/kubelet"]).toBe(true);
    expect(during.sysctls["kernel.panic"]).not.toBe(panic);
    expect(during.links).toEqual(links);
    expect(during).not.toEqual(before);

    await restoreHost(before, { nodeDir, links });
    expect(snapshotHost({ nodeDir, links })).toEqual(before);
  } finally {
    await restoreHost(before, { nodeDir, links });
    rmSync(nodeDir, { recursive: true, force: true });
    unlock();
  }
});
