import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, PLUGIN, type PluginRun, runPlugin } from "../test/run-plugin.js";

const ipsOf = (r: PluginRun) => (r.json?.ips ?? []) as { address: string }[];

let dir: string;
// the node's flat file, for the whole file (the agent lives across tests), so no host file under
// /etc/cni is merged into the tests; node-level keys of a test's ipam block are written there (onNode)
const nodeDir = mkdtempSync(join(tmpdir(), "ipamkit-cni-node-"));
useNode(nodeDir);
afterAll(() => rmSync(nodeDir, { recursive: true, force: true }));
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-cni-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** In agent mode every call goes through the node-local agent (required: a fallback would hide a failure). */
let agentIpam: Record<string, unknown> = {};

const netconf = (cniVersion: string, ipam: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  cniVersion,
  name: "macvlan-net",
  type: "macvlan",
  ipam: onNode({
    type: "ipamkit",
    range: "10.20.0.0/24",
    gateway: "10.20.0.1",
    ipRanges: [{ range: "fd00:20::/64", gateway: "fd00:20::1" }],
    routes: [{ dst: "0.0.0.0/0" }],
    dns: { nameservers: ["10.20.0.53"] },
    data_dir: join(dir, "store"),
    ...agentIpam,
    ...ipam,
  }),
  ...extra,
});

for (const mode of ["direct", "agent"] as const) {
  describe(`the built plugin, as a subprocess (${mode === "direct" ? "direct mode" : "through the node-local agent"})`, () => {
    let agent: AgentProcess | undefined;
    beforeAll(async () => {
      if (mode === "direct") return;
      agent = await startAgentProcess();
      agentIpam = { agent_socket: agent.socketPath, agent_required: true };
    });
    afterAll(async () => {
      agentIpam = {};
      await agent?.stop();
    });

    it("VERSION lists the supported versions", async () => {
      const r = await runPlugin({ CNI_COMMAND: "VERSION" }, { cniVersion: "1.0.0" });
      expect(r.code).toBe(0);
      expect(r.json).toEqual({ cniVersion: "1.0.0", supportedVersions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] });
    });

    it("ADD and DEL with cniVersion 0.2.0: the ip4/ip6 result", async () => {
      const conf = netconf("0.2.0", { range: "10.20.7.0/24", gateway: "10.20.7.1", ipRanges: [{ range: "fd00:27::/64" }] });
      const add = await runPlugin(cniEnv("ADD", "v020"), conf);
      expect(add.code, add.stdout).toBe(0);
      expect(add.json).toEqual({
        cniVersion: "0.2.0",
        ip4: { ip: "10.20.7.2/24", gateway: "10.20.7.1", routes: [{ dst: "0.0.0.0/0" }] },
        ip6: { ip: "fd00:27::1/64" },
        dns: { nameservers: ["10.20.0.53"] },
      });
      expect((await runPlugin(cniEnv("DEL", "v020"), conf)).code).toBe(0);
    });

    for (const version of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
      it(`ADD, repeated ADD, CHECK, DEL, repeated DEL with cniVersion ${version}`, async () => {
        const conf = netconf(version);
        const add = await runPlugin(
          cniEnv("ADD", "c1", "net1", { CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=uid-1" }),
          conf,
        );
        expect(add.stderr).toBe("");
        expect(add.code).toBe(0);
        const v = version < "1.0.0" ? { version: "4" } : {};
        const v6 = version < "1.0.0" ? { version: "6" } : {};
        expect(add.json).toEqual({
          cniVersion: version,
          ips: [
            { ...v, address: "10.20.0.2/24", gateway: "10.20.0.1" },
            { ...v6, address: "fd00:20::2/64", gateway: "fd00:20::1" },
          ],
          routes: [{ dst: "0.0.0.0/0" }],
          dns: { nameservers: ["10.20.0.53"] },
        });
        const again = await runPlugin(cniEnv("ADD"), conf);
        expect(again.json).toEqual(add.json);
        if (version >= "0.4.0") {
          const check = await runPlugin(cniEnv("CHECK"), { ...conf, prevResult: add.json });
          expect(check.code).toBe(0);
          const wrong = await runPlugin(cniEnv("CHECK"), { ...conf, prevResult: { ...add.json, ips: [{ address: "10.20.0.9/24" }] } });
          expect(wrong.code).toBe(1);
          expect(wrong.json?.code).toBe(104);
        } else {
          const check = await runPlugin(cniEnv("CHECK"), { ...conf, prevResult: add.json });
          expect(check.json?.code).toBe(1);
        }
        expect((await runPlugin(cniEnv("DEL"), conf)).code).toBe(0);
        expect((await runPlugin(cniEnv("DEL"), conf)).code).toBe(0);
        if (version >= "0.4.0") {
          const gone = await runPlugin(cniEnv("CHECK"), { ...conf, prevResult: add.json });
          expect(gone.json?.code).toBe(104);
        }
      });
    }

    it("serves static requests from runtimeConfig.ips and CNI_ARGS IP=", async () => {
      const fromRuntime = await runPlugin(cniEnv("ADD", "s1"), { ...netconf("1.0.0"), runtimeConfig: { ips: ["10.20.0.77/24"] } });
      expect(ipsOf(fromRuntime)[0]?.address).toBe("10.20.0.77/24");
      const fromArgs = await runPlugin(cniEnv("ADD", "s2", "net1", { CNI_ARGS: "IP=fd00:20::99" }), netconf("1.0.0"));
      expect(ipsOf(fromArgs)[1]?.address).toBe("fd00:20::99/64");
    });

    it("per-node blocks: each node's addresses come from a block it owns, answered with the range's prefix; CHECK, GC, STATUS, DEL", async () => {
      const blocks = (node?: string, extra: Record<string, unknown> = {}) =>
        netconf("1.1.0", { node_block_size: 16, ...(node === undefined ? {} : { node_name: node }) }, extra);
      const a = await runPlugin(cniEnv("ADD", "a1"), blocks("node-a"));
      const b = await runPlugin(cniEnv("ADD", "b1"), blocks("node-b"));
      const h = await runPlugin(cniEnv("ADD", "h1"), blocks()); // node name: the host's (or the agent's)
      expect([a.code, b.code, h.code, a.stderr]).toEqual([0, 0, 0, ""]);
      const [a4, a6] = ipsOf(a).map((ip) => ip.address);
      const [b4] = ipsOf(b).map((ip) => ip.address);
      expect(a4).toMatch(/^10\.20\.0\.\d+\/24$/);
      expect(a6).toMatch(/^fd00:20::[0-9a-f:]+\/64$/);
      const blockOf = (address = "") => Number(address.split("/")[0]?.split(".")[3]) >> 4;
      expect(blockOf(a4)).not.toBe(blockOf(b4));
      const store = createFileStore({ dir: join(dir, "store") });
      const owners = new Set<string>();
      for (const ref of await store.listClaims("node-blocks")) owners.add((await store.readClaim(ref))?.claim.key.containerId ?? "");
      await store.close();
      expect([...owners].sort()).toEqual(["node-a", "node-b", hostname()].sort());
      expect((await runPlugin(cniEnv("CHECK", "a1"), blocks("node-a", { prevResult: a.json }))).code).toBe(0);
      expect((await runPlugin({ CNI_COMMAND: "STATUS" }, blocks("node-a"))).code).toBe(0);
      const again = await runPlugin(cniEnv("ADD", "a1"), blocks("node-a"));
      expect(again.json).toEqual(a.json);
      expect((await runPlugin(cniEnv("DEL", "a1"), blocks("node-a"))).code).toBe(0);
      const gone = await runPlugin(cniEnv("CHECK", "a1"), blocks("node-a", { prevResult: a.json }));
      expect(gone.json?.code).toBe(104);
      const gc = await runPlugin(
        { CNI_COMMAND: "GC" },
        blocks("node-a", { "cni.dev/valid-attachments": [{ containerID: "b1", ifname: "net1" }] }),
      );
      expect(gc.code).toBe(0);
      expect((await runPlugin(cniEnv("CHECK", "h1"), blocks(undefined, { prevResult: h.json }))).json?.code).toBe(104);
      expect((await runPlugin(cniEnv("CHECK", "b1"), blocks("node-b", { prevResult: b.json }))).code).toBe(0);
      const pinned = await runPlugin(cniEnv("ADD", "s1"), blocks("node-a", { runtimeConfig: { ips: ["10.20.0.77"] } }));
      expect([pinned.json?.code, pinned.json?.msg]).toEqual([7, expect.stringMatching(/per-node blocks/)]);
      const tooBig = await runPlugin(cniEnv("ADD", "t1"), netconf("1.1.0", { node_block_size: 256 }));
      expect([tooBig.json?.code, tooBig.json?.msg]).toEqual([7, expect.stringMatching(/node_block_size.*10\.20\.0\.0\/24/)]);
    });

    it("GC releases attachments not in cni.dev/valid-attachments; STATUS reports exhaustion with code 50", async () => {
      const tiny = { range: "10.30.0.0/30", ipRanges: [], gateway: undefined, routes: [], dns: undefined };
      for (const id of ["a", "b"]) expect((await runPlugin(cniEnv("ADD", id), netconf("1.1.0", tiny))).code).toBe(0);
      const full = await runPlugin({ CNI_COMMAND: "STATUS", CNI_PATH: "/usr/lib/cni" }, netconf("1.1.0", tiny));
      expect(full.code).toBe(1);
      expect(full.json?.code).toBe(50);
      const gc = await runPlugin(
        { CNI_COMMAND: "GC", CNI_PATH: "/usr/lib/cni" },
        { ...netconf("1.1.0", tiny), "cni.dev/valid-attachments": [{ containerID: "a", ifname: "net1" }] },
      );
      expect(gc.code).toBe(0);
      expect(gc.stdout).toBe("");
      expect((await runPlugin({ CNI_COMMAND: "STATUS", CNI_PATH: "/usr/lib/cni" }, netconf("1.1.0", tiny))).code).toBe(0);
      const again = await runPlugin(cniEnv("ADD", "a"), netconf("1.1.0", tiny));
      expect(ipsOf(again)[0]?.address).toBe("10.30.0.1/30");
      const c = await runPlugin(cniEnv("ADD", "c"), netconf("1.1.0", tiny));
      expect(ipsOf(c)[0]?.address).toBe("10.30.0.2/30");
      // GC and STATUS need a 1.1.0 config
      expect(
        (await runPlugin({ CNI_COMMAND: "GC", CNI_PATH: "/usr/lib/cni" }, { ...netconf("1.0.0", tiny), "cni.dev/valid-attachments": [] }))
          .json?.code,
      ).toBe(1);
    });

    it("answers every error class as CNI error JSON on stdout with exit 1, never a stack trace", async () => {
      const cases: [Record<string, string>, string | object, number][] = [
        [{ CNI_COMMAND: "ADD" }, netconf("1.0.0"), 4],
        [cniEnv("ADD", "-bad"), netconf("1.0.0"), 4],
        [cniEnv("FROB"), netconf("1.0.0"), 4],
        [cniEnv("ADD"), "{not json", 6],
        [cniEnv("ADD"), netconf("0.0.9"), 1],
        [cniEnv("ADD"), netconf("1.0.0", { exclude: ["10.20.1.5/33"] }), 7],
        [cniEnv("ADD"), netconf("1.0.0", { enable_overlapping_ranges: "no" }), 7],
        [cniEnv("ADD"), netconf("1.0.0", { datastore: "kubernetes", kubernetes: { kubeconfig: "/nonexistent/kube.conf" } }), 7],
      ];
      for (const [env, stdin, code] of cases) {
        const r = await runPlugin(env, stdin);
        expect(r.code, JSON.stringify(env)).toBe(1);
        expect(r.json?.code, `${JSON.stringify(env)} ${r.stdout}`).toBe(code);
        expect(typeof r.json?.msg).toBe("string");
        expect(r.stdout).not.toMatch(/\n\s+at /);
      }
    });

    it("reports an exhausted range with plugin code 100 and keeps nothing from a failed multi-range ADD", async () => {
      const conf = netconf("1.0.0", { range: "10.40.0.0/30", exclude: ["10.40.0.1"], gateway: undefined });
      expect((await runPlugin(cniEnv("ADD", "x0"), conf)).code).toBe(0);
      const r = await runPlugin(cniEnv("ADD", "x1"), conf);
      expect(r.json?.code).toBe(100);
      // the v6 range was tried first or not at all: either way x1 holds nothing afterwards
      const check = await runPlugin(cniEnv("CHECK", "x1"), { ...conf, prevResult: { cniVersion: "1.0.0", ips: [] } });
      expect(check.json?.code).toBe(104);
    });

    // direct mode only: the agent is started from dist/
    if (mode === "direct") {
      it("runs copied into a bin directory with no node_modules (ipamkit, ipamkit-node, ipamkit-direct.cjs); the etcd store only with ipamkit-etcd.cjs beside it", async () => {
        const bin = join(dir, "bin");
        const { chmodSync, mkdirSync } = await import("node:fs");
        mkdirSync(bin);
        for (const name of ["ipamkit", "ipamkit-node", "ipamkit-direct.cjs"]) copyFileSync(join(PLUGIN, "..", name), join(bin, name));
        chmodSync(join(bin, "ipamkit"), 0o755);
        chmodSync(join(bin, "ipamkit-node"), 0o755);
        const ok = await runPlugin(cniEnv("ADD"), netconf("1.0.0"), join(bin, "ipamkit"));
        expect(ok.code).toBe(0);
        // nothing listens on port 9: with the etcd bundle loaded, the call fails on the store, not on the code
        const etcdConf = netconf("1.0.0", { datastore: "etcd", etcd_host: "127.0.0.1:9" });
        const missing = await runPlugin(cniEnv("ADD", "e1"), etcdConf, join(bin, "ipamkit"));
        expect(missing.json?.code).toBe(2);
        expect(String(missing.json?.msg)).toContain("ipamkit-etcd.cjs");
        copyFileSync(join(PLUGIN, "..", "ipamkit-etcd.cjs"), join(bin, "ipamkit-etcd.cjs"));
        const loaded = await runPlugin(cniEnv("ADD", "e1"), etcdConf, join(bin, "ipamkit"));
        expect(loaded.json?.code).toBe(11);
        expect(String(loaded.json?.msg)).toContain("127.0.0.1:9");
      });
    }

    it("200 ADD processes at once on one file-store pool get 200 distinct IPs", async () => {
      const conf = netconf("1.0.0", { range: "10.50.0.0/22", ipRanges: [], gateway: undefined });
      const runs = await Promise.all(Array.from({ length: 200 }, (_, i) => runPlugin(cniEnv("ADD", `p${i}`), conf)));
      const failed = runs.filter((r) => r.code !== 0);
      expect(failed.map((r) => r.stdout)).toEqual([]);
      const addresses = runs.map((r) => ipsOf(r)[0]?.address);
      expect(new Set(addresses).size).toBe(200);
    }, 300_000);
  });
}
