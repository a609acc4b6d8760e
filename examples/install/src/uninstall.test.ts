import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { exited, removeTempDirs, run, serviceAccountVolume, start, tempDir, until } from "../test/run.js";
import { parseInstallArgs } from "./install-args.js";
import { uninstall } from "./uninstall.js";

// ipamkit-install --uninstall (the chart's cni.uninstall) on a temp host root: what it removes, what
// it leaves and why, with libcni cache entries written as libcni writes them.

const INSTALL = join(inject("installDist"), "ipamkit-install");
const PLUGIN = inject("pluginDist");
const ENV = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443", NODENAME: "node-a" };

afterAll(removeTempDirs);

function host() {
  const root = tempDir("ipamkit-uninstall-host-");
  const sa = join(tempDir("ipamkit-uninstall-sa-"), "sa");
  serviceAccountVolume(sa, { token: "t", ca: "CA\n", namespace: "ipam" });
  const args = [
    "--source",
    PLUGIN,
    "--host-root",
    root,
    "--service-account-dir",
    sa,
    "--binary-name",
    "ipamkit",
    "--binary-name",
    "whereabouts",
  ];
  return { root, args, bin: join(root, "opt/cni/bin"), conf: join(root, "etc/cni/net.d/whereabouts.d"), cache: join(root, "var/lib/cni") };
}

/** A libcni cache entry (cniCacheV1: the network config base64-encoded) at <cache>/<sub>/<name>. */
function cacheEntry(dir: string, name: string, config: object): void {
  mkdirSync(dir, { recursive: true });
  const entry = {
    kind: "cniCacheV1",
    containerId: name,
    ifName: "net1",
    networkName: "macvlan-net",
    config: Buffer.from(JSON.stringify(config)).toString("base64"),
  };
  writeFileSync(join(dir, name), JSON.stringify(entry));
}
const conflist = (ipamType: string) => ({
  cniVersion: "1.0.0",
  name: "macvlan-net",
  plugins: [{ type: "macvlan", master: "eth1", ipam: { type: ipamType, range: "10.10.0.0/24" } }],
});

async function installed(h: ReturnType<typeof host>, extra: string[] = []) {
  const r = await run(INSTALL, [...h.args, "--node-files", ...extra], ENV);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  writeFileSync(join(h.bin, "bridge"), "another plugin\n", { mode: 0o755 });
}

describe("ipamkit-install --uninstall", () => {
  it("with no attachment using ipamkit: removes the binaries, Node files and whereabouts.d; leaves other plugins", async () => {
    const h = host();
    await installed(h);
    cacheEntry(join(h.cache, "results"), "c-other", conflist("host-local")); // not ipamkit's
    const r = await run(INSTALL, [...h.args, "--node-files", "--uninstall"], ENV);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readdirSync(h.bin)).toEqual(["bridge"]);
    expect(existsSync(h.conf)).toBe(false);
    expect(existsSync(join(h.root, "etc/cni/net.d"))).toBe(true);
    expect(r.stdout).toContain('"msg":"uninstall finished"');
  });

  it("an attachment in Multus' cache whose conflist uses ipam type whereabouts: nothing is removed, the log says why", async () => {
    const h = host();
    await installed(h);
    cacheEntry(join(h.cache, "multus", "results"), "macvlan-net-abc123-net1", conflist("whereabouts"));
    const before = readdirSync(h.bin).sort();
    const r = await run(INSTALL, [...h.args, "--node-files", "--uninstall"], ENV);
    expect(r.code).toBe(0);
    expect(readdirSync(h.bin).sort()).toEqual(before);
    expect(readdirSync(h.conf).sort()).toEqual(["nodename", "whereabouts.conf", "whereabouts.kubeconfig"]);
    const line = r.stdout.split("\n").find((l) => l.includes("attachments still use them"));
    expect(line).toBeDefined();
    expect(JSON.parse(line as string).inUse).toEqual([join(h.cache, "multus/results/macvlan-net-abc123-net1")]);
  });

  it("a cache file it cannot read counts as in use", async () => {
    const h = host();
    await installed(h);
    mkdirSync(join(h.cache, "results"), { recursive: true });
    writeFileSync(join(h.cache, "results", "torn"), '{"kind":"cniCacheV1","config":"');
    const r = await run(INSTALL, [...h.args, "--uninstall"], ENV);
    expect(r.code).toBe(0);
    expect(existsSync(join(h.bin, "ipamkit"))).toBe(true);
    expect(r.stdout).toMatch(/torn \(unreadable: /);
  });

  it("leaves a file that is no longer what it installed: another program's binary, a flat file edited by hand", async () => {
    const h = host();
    await installed(h);
    writeFileSync(join(h.bin, "whereabouts"), "Whereabouts' own binary\n"); // its installer put it back
    const flat = join(h.conf, "whereabouts.conf");
    writeFileSync(flat, `${readFileSync(flat, "utf8").trimEnd().slice(0, -1)}, "log_level": "debug" }\n`);
    const r = await run(INSTALL, [...h.args, "--uninstall"], ENV);
    expect(r.code).toBe(0);
    expect(readdirSync(h.bin).sort()).toEqual(["bridge", "whereabouts"]);
    expect(readdirSync(h.conf)).toEqual(["whereabouts.conf"]);
    const kept = JSON.parse(r.stdout.split("\n").find((l) => l.includes("uninstall finished")) as string).kept;
    expect(kept.map((k: { path: string }) => k.path).sort()).toEqual([flat, join(h.bin, "whereabouts")].sort());
  });

  it("puts back what it removed when an attachment appears meanwhile (an ADD that finished during the uninstall)", () => {
    const h = host();
    const parsed = parseInstallArgs([...h.args], ENV);
    if (parsed === "help") throw new Error("unexpected help");
    return installed(h).then(() => {
      const before = Object.fromEntries(["ipamkit", "whereabouts"].map((n) => [n, readFileSync(join(h.bin, n))]));
      const flat = readFileSync(join(h.conf, "whereabouts.conf"));
      let looks = 0;
      const report = uninstall(parsed.options, () => (looks++ === 0 ? [] : [{ file: "/var/lib/cni/results/new" }]));
      expect(looks).toBe(2);
      expect(report.removed.length).toBeGreaterThan(0);
      expect(report.restored.sort()).toEqual(report.removed.filter((p) => p !== h.conf).sort());
      for (const [name, bytes] of Object.entries(before)) expect(readFileSync(join(h.bin, name)).equals(bytes)).toBe(true);
      expect(readFileSync(join(h.conf, "whereabouts.conf")).equals(flat)).toBe(true);
    });
  });

  it("--uninstall-on-exit: the watcher removes the files when stopped", async () => {
    const h = host();
    await installed(h);
    const watcher = start(INSTALL, [...h.args, "--skip-binaries", "--watch", "--interval-ms", "50", "--uninstall-on-exit"], ENV);
    await until("the watcher's first pass", () => watcher.output().includes("configuration written"));
    watcher.child.kill("SIGTERM");
    expect(await exited(watcher.child)).toBe(0);
    expect(watcher.output()).toContain('"msg":"uninstall finished"');
    expect(readdirSync(h.bin)).toEqual(["bridge"]);
    expect(existsSync(h.conf)).toBe(false);
  });

  it("refuses --uninstall with --watch, --uninstall-on-exit without it, a relative --cni-cache-dir", async () => {
    const h = host();
    for (const [args, message] of [
      [["--uninstall", "--watch"], "--uninstall runs once: not with --watch or --uninstall-on-exit"],
      [["--uninstall-on-exit"], "--uninstall-on-exit needs --watch"],
      [["--uninstall", "--cni-cache-dir", "var/lib/cni"], '--cni-cache-dir must be an absolute path: "var/lib/cni"'],
    ] as const) {
      const r = await run(INSTALL, [...h.args, ...args], ENV);
      expect(r.code).toBe(2);
      expect(r.stderr.split("\n")[0]).toBe(`ipamkit-install: ${message}`);
    }
  });
});
