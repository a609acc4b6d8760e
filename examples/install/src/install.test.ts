import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, describe, expect, inject, it } from "vitest";
import { exited, removeTempDirs, run, serviceAccountVolume, start, tempDir, until } from "../test/run.js";

const INSTALL = join(inject("installDist"), "ipamkit-install");
const PLUGIN = inject("pluginDist");
const CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const ENV = { KUBERNETES_SERVICE_HOST: "fd00:10::1", KUBERNETES_SERVICE_PORT: "6443", NODENAME: "node-a.example" };

afterAll(removeTempDirs);

/** A temp host root with a ServiceAccount volume; `args` point the installer at them. */
function host(token = "token-1") {
  const root = tempDir("ipamkit-host-");
  const sa = join(tempDir("ipamkit-sa-"), "serviceaccount");
  const volume = serviceAccountVolume(sa, { token, ca: CA, namespace: "ipam-system" });
  const args = ["--source", PLUGIN, "--host-root", root, "--service-account-dir", sa];
  const conf = join(root, "etc/cni/net.d/whereabouts.d");
  return { root, sa, volume, args, conf, bin: join(root, "opt/cni/bin") };
}

const tempFiles = (dir: string) => readdirSync(dir).filter((name) => name.includes(".ipamkit-tmp-"));

describe("ipamkit-install on a temp host root", () => {
  it("replaces a symlink planted at the target instead of writing through it, and the installed binary runs", async () => {
    const h = host();
    mkdirSync(h.bin, { recursive: true });
    const victim = join(h.root, "usr-bin-victim");
    writeFileSync(victim, "not to be overwritten\n", { mode: 0o755 });
    symlinkSync(victim, join(h.bin, "whereabouts"));
    // an installer killed mid-write left this an hour ago; a concurrent one's file is fresh
    const stale = join(h.bin, ".ipamkit.ipamkit-tmp-999-0123abcd");
    writeFileSync(stale, "half");
    utimesSync(stale, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    const fresh = join(h.bin, ".ipamkit.ipamkit-tmp-998-89abcdef");
    writeFileSync(fresh, "in flight");

    const r = await run(INSTALL, [...h.args, "--binary-name", "ipamkit", "--binary-name", "whereabouts", "--node-files"], ENV);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("not to be overwritten\n");
    const binary = readFileSync(join(PLUGIN, "ipamkit"));
    for (const name of ["ipamkit", "whereabouts"]) {
      const stat = lstatSync(join(h.bin, name));
      expect(stat.isFile()).toBe(true);
      expect(stat.mode & 0o7777).toBe(0o755);
      expect(readFileSync(join(h.bin, name)).equals(binary)).toBe(true);
    }
    expect(lstatSync(join(h.bin, "ipamkit-node")).mode & 0o7777).toBe(0o755);
    for (const name of ["ipamkit-direct.cjs", "ipamkit-kubernetes.cjs", "ipamkit-etcd.cjs", "ipamkit-kubernetes.cjs.v8cache"])
      expect(readFileSync(join(h.bin, name)).equals(readFileSync(join(PLUGIN, name)))).toBe(true);
    expect(tempFiles(h.bin)).toEqual([".ipamkit.ipamkit-tmp-998-89abcdef"]);

    // what a runtime does with it: VERSION through the installed drop-in name
    const version = await run(join(h.bin, "whereabouts"), [], { CNI_COMMAND: "VERSION" }, '{"cniVersion":"1.0.0"}');
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ supportedVersions: expect.arrayContaining(["0.4.0", "1.0.0", "1.1.0"]) });
  });

  it("writes the flat file, nodename and a kubeconfig client-node loads; a second run changes nothing", async () => {
    const h = host("token-abc");
    const extra = JSON.stringify({ agent_socket: "/run/ipamkit/agent.sock", agent_required: true });
    const args = [...h.args, "--flat-file-json", extra, "--reconciler-cron", "0 3 * * *"];
    expect((await run(INSTALL, args, ENV)).code).toBe(0);

    expect(JSON.parse(readFileSync(join(h.conf, "whereabouts.conf"), "utf8"))).toEqual({
      datastore: "kubernetes",
      configuration_path: "/etc/cni/net.d/whereabouts.d",
      kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" },
      reconciler_cron_expression: "0 3 * * *",
      agent_socket: "/run/ipamkit/agent.sock",
      agent_required: true,
    });
    // root only: it may name etcd credentials
    expect(statSync(join(h.conf, "whereabouts.conf")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(h.conf, "nodename"), "utf8")).toBe("node-a.example\n");
    const kubeconfigPath = join(h.conf, "whereabouts.kubeconfig");
    expect(statSync(kubeconfigPath).mode & 0o777).toBe(0o600);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    expect(kc.getCurrentCluster()).toMatchObject({ server: "https://[fd00:10::1]:6443", caData: Buffer.from(CA).toString("base64") });
    expect(kc.getCurrentUser()?.token).toBe("token-abc");
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe("ipam-system");

    const before = Object.fromEntries(readdirSync(h.conf).map((name) => [name, statSync(join(h.conf, name)).ino]));
    const again = await run(INSTALL, args, ENV);
    expect(again.code).toBe(0);
    const logged = again.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { files: Record<string, string> });
    for (const line of logged) expect(Object.values(line.files).every((outcome) => outcome === "unchanged")).toBe(true);
    expect(Object.fromEntries(readdirSync(h.conf).map((name) => [name, statSync(join(h.conf, name)).ino]))).toEqual(before);
  });

  it("--namespace and WHEREABOUTS_NAMESPACE set the kubeconfig's namespace; etcd writes no kubeconfig", async () => {
    const h = host();
    expect((await run(INSTALL, h.args, { ...ENV, WHEREABOUTS_NAMESPACE: "wb" })).code).toBe(0);
    const kc = new KubeConfig();
    kc.loadFromFile(join(h.conf, "whereabouts.kubeconfig"));
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe("wb");
    const e = host();
    const etcd = { etcd_host: "10.0.0.5:2379", etcd_ca_cert_file: "/etc/ipamkit/etcd/ca.crt" };
    const r = await run(INSTALL, [...e.args, "--datastore", "etcd", "--flat-file-json", JSON.stringify(etcd)], {});
    expect(r.code).toBe(0);
    expect(readdirSync(e.conf).sort()).toEqual(["whereabouts.conf"]);
    const flat = JSON.parse(readFileSync(join(e.conf, "whereabouts.conf"), "utf8"));
    expect(flat).toMatchObject({ datastore: "etcd", ...etcd });
    // unset: not written (ipamkit's reconciler reads its ConfigMap; the plugin would warn on every call)
    expect(flat).not.toHaveProperty("reconciler_cron_expression");
  });

  it("--watch rewrites the kubeconfig within an interval of a token rotation, and only then", async () => {
    const h = host("token-1");
    const watcher = start(INSTALL, [...h.args, "--skip-binaries", "--watch", "--interval-ms", "100"], ENV);
    try {
      const path = join(h.conf, "whereabouts.kubeconfig");
      await until("the first kubeconfig", () => {
        try {
          return readFileSync(path, "utf8").includes("token-1");
        } catch {
          return false;
        }
      });
      const first = statSync(path);
      await new Promise((r) => setTimeout(r, 600)); // six polls with nothing changed
      expect(statSync(path).ino).toBe(first.ino);
      expect(statSync(path).mtimeMs).toBe(first.mtimeMs);

      h.volume.rotate("token-2"); // the kubelet's ..data swap
      await until("the rotated token in the kubeconfig", () => readFileSync(path, "utf8").includes("token-2"), 5_000);
      expect(statSync(path).ino).not.toBe(first.ino); // renamed into place, not rewritten in place
      expect(statSync(path).mode & 0o777).toBe(0o600);

      rmSync(path); // someone removed it: back within an interval
      await until("the kubeconfig restored", () => {
        try {
          return readFileSync(path, "utf8").includes("token-2");
        } catch {
          return false;
        }
      });
      expect(tempFiles(h.conf)).toEqual([]);
      expect(existsInBin(h.bin)).toBe(false); // --skip-binaries
    } finally {
      watcher.child.kill("SIGTERM");
    }
    const started = Date.now();
    expect(await exited(watcher.child)).toBe(0);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(watcher.output()).toContain("configuration rewritten");
  });
});

function existsInBin(bin: string): boolean {
  try {
    return readdirSync(bin).length > 0;
  } catch {
    return false;
  }
}

describe("ipamkit-install errors: one line, a code, no stack", () => {
  it("no ServiceAccount token, no in-cluster environment, a directory at the target, a bad option", async () => {
    const h = host();
    const noSa = await run(INSTALL, [...h.args, "--service-account-dir", join(h.root, "missing")], ENV);
    expect(noSa.code).toBe(1);
    expect(noSa.stderr).toMatch(/^ipamkit-install: SERVICE_ACCOUNT: cannot read the ServiceAccount token \(.*missing\/token\): .*\n$/);

    const noEnv = await run(INSTALL, h.args, {});
    expect(noEnv.code).toBe(1);
    expect(noEnv.stderr).toMatch(/^ipamkit-install: ENVIRONMENT: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set.*\n$/);

    expect(existsInBin(h.bin)).toBe(false); // nothing was installed by the runs that failed

    mkdirSync(join(h.bin, "ipamkit"), { recursive: true });
    const dir = await run(INSTALL, h.args, ENV);
    expect(dir.code).toBe(1);
    expect(dir.stderr).toMatch(/^ipamkit-install: TARGET_NOT_WRITABLE: cannot write .*\/opt\/cni\/bin\/ipamkit: .*\n$/);
    expect(tempFiles(h.bin)).toEqual([]);

    const noSource = await run(INSTALL, [...h.args, "--source", h.root], ENV);
    expect(noSource.stderr).toMatch(/^ipamkit-install: SOURCE_MISSING: cannot read .*\/ipamkit: .*\n$/);

    for (const bad of [
      ["--host-root", "relative"],
      ["--datastore", "consul"],
      ["--flat-file-json", "[1]"],
      ["--binary-name", "../x"],
      ["--bogus"],
    ]) {
      const r = await run(INSTALL, [...h.args, ...bad], ENV);
      expect(r.code).toBe(2);
      expect(r.stderr.split("\n")[0]).toMatch(/^ipamkit-install: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });
});

describe("ipamkit-probe (the agent container's exec probe)", () => {
  it("exits 0 while the real agent answers on its socket, 1 with one line once it is gone", async () => {
    const dir = tempDir("ipamkit-probe-");
    const socket = join(dir, "agent.sock");
    const agent = start(join(PLUGIN, "ipamkit-agent"), ["--socket", socket, "--log-level", "info"], {});
    try {
      await until("the agent listening", () => agent.output().includes("ipamkit agent listening"));
      const up = await run(join(inject("installDist"), "ipamkit-probe"), ["--socket", socket], {});
      expect(up.stderr).toBe("");
      expect(up.code).toBe(0);
      expect(up.stdout).toMatch(/^ipamkit agent at .*agent\.sock answers \(\d+ counters\)\n$/);
    } finally {
      agent.child.kill("SIGTERM");
    }
    expect(await exited(agent.child)).toBe(0);
    const down = await run(join(inject("installDist"), "ipamkit-probe"), ["--socket", socket, "--timeout-ms", "1000"], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^ipamkit-probe: ipamkit agent at .*agent\.sock: .+\n$/);
    const usage = await run(join(inject("installDist"), "ipamkit-probe"), ["--socket", "relative.sock"], {});
    expect(usage.code).toBe(2);
  });
});
