import { execFileSync } from "node:child_process";
import { copyFileSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CustomObjectsApi, loadAllYaml } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CHART, helmBinary, type Rendered } from "../test/helm.js";
import { type BuiltImage, buildAndUnpack, inImage, requireImageTools } from "../test/image.js";
import { exited, removeTempDirs, run, serviceAccountVolume, start, tempDir, until } from "../test/run.js";

// The OCI image scripts/build-image.sh builds (`pnpm image`), unpacked with umoci: its entrypoints
// run from the unpacked root file system (chroot, in a mount namespace where the test's "host"
// directories are bind-mounted as a pod's hostPath volumes would be).

/** The default values: the DaemonSet with its token watcher, the reconciler in cron mode. */
const DEFAULT_VALUES: string[] = [];
let image: BuiltImage;
beforeAll(() => {
  requireImageTools();
  image = buildAndUnpack(tempDir("ipamkit-image-"), { plugin: inject("pluginDist"), install: inject("installDist") });
  const mb = (statSync(image.archive).size / 1e6).toFixed(1);
  console.log(`image: ${image.archive}: ${mb} MB (gzip layers), built in ${(image.buildMs / 1000).toFixed(1)} s`);
}, 600_000);
afterAll(removeTempDirs);

/** Runs `command` inside the image with `mounts`; resolves with its exit code and output. */
const runInImage = (mounts: ReadonlyArray<readonly [string, string]>, command: string[], env: Record<string, string> = {}) => {
  const [file, ...args] = inImage(image.rootfs, mounts, command);
  return run(file as string, args, env);
};

describe("the OCI image", () => {
  it("reads back with skopeo: one gzip layer, node as the entrypoint, the installer's help as the command", () => {
    const config = JSON.parse(execFileSync("skopeo", ["inspect", "--config", `oci-archive:${image.archive}`], { encoding: "utf8" })) as {
      config: { Entrypoint: string[]; Cmd: string[]; Labels: Record<string, string> };
      rootfs: { diff_ids: string[] };
    };
    expect(config.config.Entrypoint).toEqual(["/usr/bin/node"]);
    expect(config.config.Cmd).toEqual(["/app/dist/ipamkit-install", "--help"]);
    expect(config.config.Labels["org.opencontainers.image.title"]).toBe("ipamkit");
    expect(config.rootfs.diff_ids).toHaveLength(1);
  });

  it("its installer, chrooted, installs into a host root mounted at /host and writes the kubeconfig from /var/run/secrets", async () => {
    const host = tempDir("ipamkit-imghost-");
    mkdirSync(join(host, "opt/cni/bin"), { recursive: true });
    writeFileSync(join(host, "victim"), "keep\n");
    symlinkSync("../../../victim", join(host, "opt/cni/bin/whereabouts")); // Whereabouts' link, relative
    const sa = join(tempDir("ipamkit-imgsa-"), "serviceaccount");
    serviceAccountVolume(sa, { token: "image-token", ca: "CA\n", namespace: "kube-system" });
    const r = await runInImage(
      [
        [host, "/host"],
        [sa, "/var/run/secrets/kubernetes.io/serviceaccount"],
      ],
      ["/usr/bin/node", "/app/dist/ipamkit-install", "--binary-name", "ipamkit", "--binary-name", "whereabouts"],
      { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443", NODENAME: "node-1" },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(host, "victim"), "utf8")).toBe("keep\n");
    const binary = readFileSync(join(image.rootfs, "app/dist/ipamkit"));
    expect(lstatSync(join(host, "opt/cni/bin/whereabouts")).isFile()).toBe(true);
    expect(readFileSync(join(host, "opt/cni/bin/whereabouts")).equals(binary)).toBe(true);
    const kubeconfig = JSON.parse(readFileSync(join(host, "etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"), "utf8")) as {
      clusters: Array<{ cluster: { server: string } }>;
      users: Array<{ user: { token: string } }>;
    };
    expect(kubeconfig.clusters[0]?.cluster.server).toBe("https://10.96.0.1:443");
    expect(kubeconfig.users[0]?.user.token).toBe("image-token");
    // the installed binary is static: it runs on the host as it is
    const version = await run(join(host, "opt/cni/bin/ipamkit"), [], { CNI_COMMAND: "VERSION", PATH: "/nonexistent" }, "{}");
    expect(JSON.parse(version.stdout)).toMatchObject({ supportedVersions: expect.arrayContaining(["1.1.0"]) });
  });

  it("its agent, chrooted, serves ADD/STATUS/DEL to the static binary its installer put on a host without Node; its probe and CLI answer", async () => {
    const shared = tempDir("ipamkit-imgrun-"); // 0700 root: a socket directory the agent accepts
    const socket = join(shared, "agent.sock");
    const [file, ...args] = inImage(
      image.rootfs,
      [[shared, shared]],
      ["/usr/bin/node", "/app/dist/ipamkit-agent", "--socket", socket, "--node-name", "node-1"],
    );
    // the node's flat file, where the installer below writes it: the agent reads it there (IPAMKIT_CONFIGURATION_PATH)
    const nodeConf = { IPAMKIT_CONFIGURATION_PATH: join(shared, "host", "etc/cni/net.d/whereabouts.d") };
    const agent = start(file as string, args, nodeConf);
    try {
      await until("the agent listening", () => agent.output().includes("ipamkit agent listening"), 15_000);
      const probe = await runInImage([[shared, shared]], ["/usr/bin/node", "/app/dist/ipamkit-probe", "--socket", socket]);
      expect(probe.code).toBe(0);
      // the host: what the image's installer puts there — the static binary alone, and a flat file
      // naming the agent's socket — and no node on PATH
      const host = join(shared, "host");
      mkdirSync(host);
      const flatKeys = { agent_socket: socket, agent_required: true, data_dir: join(shared, "data") };
      const installed = await runInImage(
        [[host, "/host"]],
        ["/usr/bin/node", "/app/dist/ipamkit-install", "--datastore", "file", "--flat-file-json", JSON.stringify(flatKeys)],
      );
      expect(installed.code).toBe(0);
      const hostBin = join(host, "opt/cni/bin");
      // the NAD's ipam block: a range; the node names its flat file (this test's host keeps it under `host`)
      const conf = JSON.stringify({ cniVersion: "1.1.0", name: "image-net", ipam: { type: "ipamkit", range: "10.88.0.0/24" } });
      const env = (command: string) => ({
        CNI_COMMAND: command,
        CNI_CONTAINERID: "c1",
        CNI_IFNAME: "net1",
        CNI_NETNS: "/var/run/netns/x",
        CNI_PATH: hostBin,
        PATH: "/nonexistent",
        ...nodeConf,
      });
      const add = await run(join(hostBin, "ipamkit"), [], env("ADD"), conf);
      expect(add.stderr).toBe("");
      expect(JSON.parse(add.stdout)).toEqual({ cniVersion: "1.1.0", ips: [{ address: "10.88.0.1/24" }] });
      expect((await run(join(hostBin, "ipamkit"), [], env("STATUS"), conf)).code).toBe(0);
      expect((await run(join(hostBin, "ipamkit"), [], env("DEL"), conf)).code).toBe(0);
      expect((await run(join(hostBin, "ipamkit"), [], env("ADD"), conf)).stdout).toContain("10.88.0.1/24"); // freed, handed out again
      // the image's CLI reads the same store through the same flat file
      const flatFile = join(host, "etc/cni/net.d/whereabouts.d/whereabouts.conf");
      const pools = await runInImage(
        [[shared, shared]],
        ["/usr/bin/node", "/app/cli/ipamkit-cli.cjs", "pools", "--config", flatFile, "--json"],
      );
      expect(pools.stderr).toBe("");
      expect(pools.code).toBe(0);
      const listed = (JSON.parse(pools.stdout) as { pools: Array<{ pool: string; used: number }> }).pools;
      expect(listed.map(({ pool, used }) => ({ pool, used }))).toEqual([{ pool: "10.88.0.0/24", used: 1 }]);
    } finally {
      agent.child.kill("SIGTERM");
    }
    expect(await exited(agent.child)).toBe(0);
    const stopped = agent
      .output()
      .split("\n")
      .find((line) => line.includes("ipamkit agent stopped"));
    expect(JSON.parse(stopped ?? "{}").requests).toBeGreaterThanOrEqual(4); // ADD, STATUS, DEL, ADD: all through it
  });
});

describe("the chart and the image agree", () => {
  it("every container and probe command the chart renders names a file of the image, run by its node", () => {
    const helm = helmBinary();
    const rendered = execFileSync(helm, ["template", "ipamkit", CHART, ...DEFAULT_VALUES], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const commands = (loadAllYaml(rendered) as Rendered[])
      .filter((o) => o?.kind === "DaemonSet" || o?.kind === "Deployment")
      .flatMap((o) => [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers])
      .flatMap((c: Rendered) => [c.command, c.startupProbe?.exec?.command, c.readinessProbe?.exec?.command, c.livenessProbe?.exec?.command])
      .filter((command): command is string[] => command !== undefined);
    expect(commands.length).toBeGreaterThanOrEqual(6);
    for (const [interpreter, program] of commands) {
      expect(interpreter).toBe("/usr/bin/node");
      expect(statSync(join(image.rootfs, program as string)).isFile()).toBe(true);
    }
  });
});

describe("the image's reconciler", () => {
  let api: KubeApiserver;
  beforeAll(async () => {
    api = await startKubeApiserver();
  });
  afterAll(async () => {
    await api?.stop();
  });

  it("runs a full pass, chrooted, against a real kube-apiserver: finds the reservation of a missing pod; and a pass on etcd", async () => {
    const shared = tempDir("ipamkit-imgrec-");
    copyFileSync(api.kubeconfigPath, join(shared, "kubeconfig"));
    const reconcile = (extra: string[]) =>
      runInImage(
        [[shared, shared]],
        [
          "/usr/bin/node",
          "/app/reconciler/ipamkit-reconciler.cjs",
          "--once",
          "--dry-run",
          "--kubeconfig",
          join(shared, "kubeconfig"),
          ...extra,
        ],
      );
    // a Whereabouts pool in kube-system holding an address for a pod that does not exist
    await api.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: "whereabouts.cni.cncf.io",
      version: "v1alpha1",
      namespace: "kube-system",
      plural: "ippools",
      body: {
        apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
        kind: "IPPool",
        metadata: { name: "10.99.0.0-24" },
        spec: { range: "10.99.0.0/24", allocations: { "5": { id: "c-gone", podref: "default/gone-0", ifname: "net1" } } },
      },
    });
    const kube = await reconcile(["--namespace", "kube-system", "--grace", "0s"]);
    expect(kube.stderr).toBe("");
    expect(kube.code).toBe(0);
    const wouldRelease = kube.stdout
      .split("\n")
      .filter((line) => line.includes("would release (dry run)"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(wouldRelease).toHaveLength(1);
    expect(JSON.stringify(wouldRelease[0])).toContain("10.99.0.5");
    const etcd = await reconcile(["--datastore", "etcd", "--etcd-endpoints", api.etcd.endpoint]);
    expect(etcd.stderr).toBe("");
    expect(etcd.code).toBe(0);
  });
});
