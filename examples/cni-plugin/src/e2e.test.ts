import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeEnv, nodeFlatFile, useNode } from "../test/node-files.js";
import { PLUGIN, runPlugin } from "../test/run-plugin.js";

// End to end with Debian's containernetworking-plugins: bridge and macvlan delegate IPAM to the
// built ipamkit binary for a "pod" network namespace; the "host" side lives in a namespace of its
// own. Only namespaces and links this test creates are touched.
const CNI_DIR = "/usr/lib/cni";
const canRun = spawnSync("ip", ["netns", "add", "ipk-probe"]).status === 0 && spawnSync("ip", ["netns", "del", "ipk-probe"]).status === 0;
if (!canRun) console.warn("[e2e] NOTICE: network namespaces cannot be created here: the bridge/macvlan end-to-end tests are skipped");

const suffix = `${process.pid % 10000}`;
const HOST = `ipk-host-${suffix}`;
const POD = `ipk-pod-${suffix}`;
let dir: string;
let binDir: string;

const ip = (...args: string[]) => execFileSync("ip", args, { encoding: "utf8" });
const inNs = (ns: string, ...args: string[]) => execFileSync("ip", ["netns", "exec", ns, ...args], { encoding: "utf8" });

function runMain(plugin: string, command: string, conf: object, containerId: string) {
  const r = spawnSync("ip", ["netns", "exec", HOST, join(CNI_DIR, plugin)], {
    input: JSON.stringify(conf),
    encoding: "utf8",
    env: {
      PATH: process.env.PATH,
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: `/var/run/netns/${POD}`,
      CNI_IFNAME: "eth0",
      CNI_PATH: `${binDir}:${CNI_DIR}`,
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=pod-0",
      // the node's flat file (the runtime's environment reaches the IPAM plugin through the main one)
      ...nodeEnv(),
    },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ipamConf = (range: string, extra: object = {}) => ({
  type: "ipamkit",
  range,
  data_dir: join(dir, "store"),
  ...extra,
});

async function holds(range: string, containerId: string): Promise<boolean> {
  const r = await runPlugin(
    { CNI_COMMAND: "CHECK", CNI_CONTAINERID: containerId, CNI_IFNAME: "eth0", CNI_NETNS: "/x", CNI_PATH: CNI_DIR },
    { cniVersion: "1.0.0", name: "probe", type: "probe", ipam: ipamConf(range), prevResult: { cniVersion: "1.0.0", ips: [] } },
  );
  return r.json?.code === 104 && String(r.json?.msg).includes("holds");
}

describe.skipIf(!canRun)("end to end: bridge and macvlan delegate IPAM to ipamkit", () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ipamkit-e2e-"));
    binDir = join(dir, "bin");
    mkdirSync(binDir);
    symlinkSync(PLUGIN, join(binDir, "ipamkit"));
    nodeFlatFile(dir, {});
    useNode(dir);
    ip("netns", "add", HOST);
    ip("netns", "add", POD);
    inNs(HOST, "ip", "link", "set", "lo", "up");
    inNs(POD, "ip", "link", "set", "lo", "up");
  });
  afterAll(() => {
    spawnSync("ip", ["netns", "del", POD]);
    spawnSync("ip", ["netns", "del", HOST]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("bridge: ADD puts the address in the pod namespace; DEL removes it and releases it", async () => {
    const conf = {
      cniVersion: "1.0.0",
      name: "e2e-bridge",
      type: "bridge",
      bridge: `ipkbr${suffix}`,
      ipam: ipamConf("10.99.0.0/24", { gateway: "10.99.0.1" }),
    };
    const add = runMain("bridge", "ADD", conf, "sandbox-a");
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout).ips[0].address).toBe("10.99.0.2/24");
    expect(inNs(POD, "ip", "-4", "addr", "show", "eth0")).toContain("10.99.0.2/24");
    expect(await holds("10.99.0.0/24", "sandbox-a")).toBe(true);
    const del = runMain("bridge", "DEL", conf, "sandbox-a");
    expect(del.code).toBe(0);
    expect(spawnSync("ip", ["netns", "exec", POD, "ip", "link", "show", "eth0"]).status).not.toBe(0);
    expect(await holds("10.99.0.0/24", "sandbox-a")).toBe(false);
  });

  it("bridge: a failed ADD (its route cannot be installed) leaves no reservation behind after the runtime's DEL", async () => {
    const conf = {
      cniVersion: "1.0.0",
      name: "e2e-bridge-fail",
      type: "bridge",
      bridge: `ipkbf${suffix}`,
      ipam: ipamConf("10.98.0.0/24", { routes: [{ dst: "192.0.2.0/24", gw: "203.0.113.1" }] }),
    };
    const add = runMain("bridge", "ADD", conf, "sandbox-f");
    expect(add.code).not.toBe(0);
    runMain("bridge", "DEL", conf, "sandbox-f"); // a runtime always DELs after a failed ADD
    expect(await holds("10.98.0.0/24", "sandbox-f")).toBe(false);
  });

  it("macvlan on a veth master: ADD puts the address in the pod namespace; DEL releases it", async () => {
    inNs(HOST, "ip", "link", "add", "ipkm0", "type", "veth", "peer", "name", "ipkm1");
    inNs(HOST, "ip", "link", "set", "ipkm0", "up");
    const conf = {
      cniVersion: "1.0.0",
      name: "e2e-macvlan",
      type: "macvlan",
      master: "ipkm0",
      mode: "bridge",
      ipam: ipamConf("10.97.0.0/24"),
    };
    const add = runMain("macvlan", "ADD", conf, "sandbox-m");
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    expect(inNs(POD, "ip", "-4", "addr", "show", "eth0")).toContain("10.97.0.1/24");
    expect(runMain("macvlan", "DEL", conf, "sandbox-m").code).toBe(0);
    expect(await holds("10.97.0.0/24", "sandbox-m")).toBe(false);
  });
});
