import { createMemoryStore, type Exclusive, type IpamStore, type PoolRef } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { CNI_FLAT, memFs } from "./config-test-kit.js";
import { dispatch } from "./dispatcher.js";
import type { NodeSliceAnswer } from "./node-slice.js";
import type { ConfigFs } from "./types.js";

// Whereabouts' node slices through the plugin: the node's name, its slice read from the
// NodeSlicePool (here a map standing for the Kubernetes store's readNodeSlice), allocation in the
// node's slice pool with the range's prefix in the result, and the errors of a node without one.

const FLAT = { datastore: "kubernetes", kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" } };
const node = (files: Record<string, string | object> = {}): ConfigFs => memFs({ [CNI_FLAT]: FLAT, ...files });
const conf = (ipam: Record<string, unknown>, name = "wbnet") =>
  JSON.stringify({
    cniVersion: "1.1.0",
    name,
    type: "macvlan",
    ipam: { type: "whereabouts", range: "10.90.0.0/22", node_slice_size: "/24", ...ipam },
  });

/** NodeSlicePools by name: node → slice. */
type Pools = Record<string, Record<string, string>>;

interface Call {
  command?: "ADD" | "DEL" | "CHECK" | "STATUS";
  id?: string;
  ipam?: Record<string, unknown>;
  name?: string;
  env?: Record<string, string>;
  fs?: ConfigFs;
  nodeName?: string;
  prevResult?: object;
  read?: boolean;
}

function harness(pools: Pools, store: IpamStore = createMemoryStore({ nodePools: true })) {
  const asked: { name: string; node: string }[] = [];
  const leases: (PoolRef | undefined)[] = [];
  const readNodeSlice = async (_config: unknown, query: { name: string; node: string }): Promise<NodeSliceAnswer> => {
    asked.push(query);
    const pool = pools[query.name];
    const answer: NodeSliceAnswer = { pool: `kube-system/${query.name}`, exists: pool !== undefined };
    const slice = pool?.[query.node];
    return slice === undefined ? answer : { ...answer, slice };
  };
  const exclusive =
    (_config: unknown, _identity: string, pool?: PoolRef): Exclusive =>
    (fn) => {
      leases.push(pool);
      return fn();
    };
  async function call(c: Call = {}) {
    let stdout = "";
    let stderr = "";
    const command = c.command ?? "ADD";
    const id = c.id ?? "c1";
    const base = JSON.parse(conf(c.ipam ?? {}, c.name)) as Record<string, unknown>;
    const code = await dispatch({
      env: {
        CNI_COMMAND: command,
        CNI_CONTAINERID: id,
        CNI_IFNAME: "net1",
        CNI_NETNS: "/var/run/netns/x",
        CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-${id}`,
        ...(c.env ?? { NODENAME: "node-a" }),
      },
      stdin: async () => JSON.stringify(c.prevResult === undefined ? base : { ...base, prevResult: c.prevResult }),
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      fs: c.fs ?? node(),
      openStore: async () => ({ ...store, close: async () => {} }),
      openExclusive: exclusive,
      ...(c.read === false ? {} : { readNodeSlice }),
      ...(c.nodeName === undefined ? {} : { nodeName: c.nodeName }),
    });
    const out = stdout === "" ? undefined : (JSON.parse(stdout) as { ips?: { address: string }[]; code?: number; msg?: string });
    return { code, out, stderr, address: out?.ips?.[0]?.address };
  }
  return { call, asked, leases, store };
}

const SLICES: Pools = { wbnet: { "node-a": "10.90.1.0/24", "node-b": "10.90.2.0/24" } };

describe("node_slice_size: the config", () => {
  it.each([
    [{ node_slice_size: "24x" }, 'must be a prefix length, e.g. "/24"'],
    [{ node_slice_size: "/20" }, "must be from /22 (the range 10.90.0.0/22) to /30"],
    [{ node_slice_size: "/31" }, "to /30"],
    [{ node_slice_size: "/24", ipRanges: [{ range: "10.91.0.0/24" }] }, "slices one range, and this config has 2"],
    [{ node_slice_size: "/24", node_block_size: 16 }, "cannot be combined with node_block_size"],
    [{ node_slice_size: "/24", sticky: true }, "cannot be combined with sticky: true"],
    [{ type: "ipamkit", datastore: "file", data_dir: "/var/lib/x" }, 'needs datastore "kubernetes"'],
  ])("refuses %j with code 7 naming ipam.node_slice_size", async (ipam, reason) => {
    const { call } = harness(SLICES);
    const { code, out } = await call({ ipam });
    expect(code).toBe(1);
    expect(out?.code).toBe(7);
    expect(out?.msg).toContain("ipam.node_slice_size");
    expect(out?.msg).toContain(reason);
  });

  it("a plugin build that cannot read NodeSlicePools says so (code 2)", async () => {
    const { code, out } = await harness(SLICES).call({ read: false });
    expect([code, out?.code]).toEqual([1, 2]);
    expect(out?.msg).toContain("cannot read NodeSlicePools");
  });
});

describe("node_slice_size: ADD, CHECK, DEL, STATUS", () => {
  it("allocates in the node's slice pool, answers with the range's prefix and gateway, and takes the per-node-pool Lease", async () => {
    const h = harness(SLICES);
    const first = await h.call({ ipam: { gateway: "10.90.0.1", whereabouts_lease: true } });
    expect(first.out?.ips).toEqual([{ address: "10.90.1.1/22", gateway: "10.90.0.1" }]);
    expect(h.asked).toEqual([{ name: "wbnet", node: "node-a" }]);
    expect(h.leases).toEqual([{ network: "", cidr: "10.90.1.0/24", node: "node-a" }]);
    expect((await h.store.listPools()).map((r) => [r.cidr, r.node])).toEqual([["10.90.1.0/24", "node-a"]]);
    expect((await h.call({ id: "c2", env: { NODENAME: "node-b" } })).address).toBe("10.90.2.1/22");
    // the same key again: the same address
    expect((await h.call()).address).toBe("10.90.1.1/22");
    const prevResult = { cniVersion: "1.1.0", ips: [{ address: "10.90.1.1/22" }] };
    expect((await h.call({ command: "CHECK", prevResult })).code).toBe(0);
    const status = await h.call({ command: "STATUS" });
    expect(status.code, JSON.stringify(status.out)).toBe(0);
    expect((await h.call({ command: "DEL" })).code).toBe(0);
    expect((await h.store.readPool({ network: "", cidr: "10.90.1.0/24", node: "node-a" }))?.pool.size).toBe(0);
    expect((await h.store.readPool({ network: "", cidr: "10.90.2.0/24", node: "node-b" }))?.pool.size).toBe(1);
  });

  it("names the NodeSlicePool after network_name, else the network's name; honours exclude and range_start in the slice", async () => {
    const named = harness({ blue: { "node-a": "10.90.3.0/24" } });
    const got = await named.call({ ipam: { network_name: "blue", exclude: ["10.90.3.0/29"] } });
    expect(got.address).toBe("10.90.3.8/22");
    expect(named.asked).toEqual([{ name: "blue", node: "node-a" }]);
    expect(await named.store.listPools()).toEqual([{ network: "blue", cidr: "10.90.3.0/24", node: "node-a" }]);
    const started = harness({ other: { "node-a": "10.90.0.0/24" } });
    expect((await started.call({ name: "other", ipam: { range_start: "10.90.0.100" } })).address).toBe("10.90.0.100/22");
  });

  it("an IPv6 slice", async () => {
    const h = harness({ wbnet: { "node-a": "fd90::100/120" } });
    expect((await h.call({ ipam: { range: "fd90::/112", node_slice_size: "/120" } })).address).toBe("fd90::101/112");
  });

  it("finds the node's name: NODENAME, the agent's own, <configuration path>/nodename, /etc/hostname", async () => {
    const h = harness({ wbnet: { env: "10.90.0.0/24", agent: "10.90.1.0/24", file: "10.90.2.0/24", host: "10.90.3.0/24" } });
    await h.call({ env: { NODENAME: " env\n" }, nodeName: "agent" });
    await h.call({ env: {}, nodeName: "agent" });
    await h.call({ env: {}, fs: node({ "/etc/cni/net.d/whereabouts.d/nodename": "file\n", "/etc/hostname": "host" }) });
    await h.call({ env: { IPAMKIT_CONFIGURATION_PATH: "/ignored" }, fs: node({ "/etc/hostname": "host\n" }) });
    expect(h.asked.map((q) => q.node)).toEqual(["env", "agent", "file", "host"]);
    const none = await h.call({ env: {}, fs: node() });
    expect([none.code, none.out?.code]).toEqual([1, 7]);
    expect(none.out?.msg).toContain(
      "needs this node's name: set NODENAME, or write it to /etc/cni/net.d/whereabouts.d/nodename or /etc/hostname",
    );
  });

  it("a node without a slice: ADD is code 11 naming the NodeSlicePool; STATUS 50; a missing NodeSlicePool is code 11", async () => {
    const h = harness(SLICES);
    const add = await h.call({ env: { NODENAME: "node-z" } });
    expect([add.code, add.out?.code]).toEqual([1, 11]);
    expect(add.out?.msg).toContain("no slice of NodeSlicePool kube-system/wbnet is assigned to node node-z yet");
    const status = await h.call({ command: "STATUS", env: { NODENAME: "node-z" } });
    expect(status.out?.code).toBe(50);
    const missing = await h.call({ name: "nonet" });
    expect([missing.out?.code, missing.out?.msg]).toEqual([
      11,
      expect.stringContaining("NodeSlicePool kube-system/nonet does not exist (yet)"),
    ]);
    expect(await h.store.listPools()).toEqual([]);
  });

  it("a slice not in the range is code 11; a slice with nothing to hand out is code 100", async () => {
    const h = harness({ wbnet: { "node-a": "10.99.0.0/24", "node-b": "10.90.2.0/24" } });
    const outside = await h.call();
    expect(outside.out?.code).toBe(11);
    expect(outside.out?.msg).toContain("not inside this network's range 10.90.0.0/22");
    const excluded = await h.call({ env: { NODENAME: "node-b" }, ipam: { exclude: ["10.90.2.0/24"] } });
    expect(excluded.out?.code).toBe(100);
  });

  it("DEL of a node whose slice is gone releases the key from the node's own pools, and nothing of another key or node", async () => {
    const pools: Pools = { wbnet: { "node-a": "10.90.1.0/24", "node-b": "10.90.2.0/24" } };
    const h = harness(pools);
    await h.call({ id: "a1" });
    await h.call({ id: "a2" });
    await h.call({ id: "a1", env: { NODENAME: "node-b" } });
    delete pools.wbnet?.["node-a"];
    expect((await h.call({ command: "DEL", id: "a1" })).code).toBe(0);
    expect(
      (await h.store.readPool({ network: "", cidr: "10.90.1.0/24", node: "node-a" }))?.pool.reservations().map((r) => r.key.containerId),
    ).toEqual(["a2"]);
    expect((await h.store.readPool({ network: "", cidr: "10.90.2.0/24", node: "node-b" }))?.pool.size).toBe(1);
    // no NodeSlicePool at all: the same
    delete pools.wbnet;
    expect((await h.call({ command: "DEL", id: "a2" })).code).toBe(0);
    expect((await h.store.readPool({ network: "", cidr: "10.90.1.0/24", node: "node-a" }))?.pool.size).toBe(0);
  });
});
