import { createMemoryStore, type IpamStore } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { loadIpamConfig } from "./config.js";
import { dispatch } from "./dispatcher.js";

// Sticky addresses through the plugin (core DESIGN.md, "Sticky addresses"): the `sticky` and
// `sticky_ttl` keys, and the seed scenario as kubelet drives it — a StatefulSet pod db-0 reborn
// with a new UID while its old sandbox, on a dead node, was never DELeted.

const netconf = (ipam: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: "1.0.0", name: "sts", ipam: { type: "ipamkit", range: "10.70.0.0/24", ...ipam } });
const fs = { exists: () => false, readText: () => "" };

async function call(store: IpamStore, command: "ADD" | "DEL", container: string, uid: string, ipam: Record<string, unknown>, pod = "db-0") {
  let stdout = "";
  let stderr = "";
  const code = await dispatch({
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: container,
      CNI_IFNAME: "net1",
      CNI_NETNS: "/var/run/netns/x",
      CNI_ARGS: `K8S_POD_NAMESPACE=db;K8S_POD_NAME=${pod};K8S_POD_UID=${uid}`,
    },
    stdin: async () => netconf(ipam),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    fs,
    openStore: async () => store,
  });
  const out = stdout === "" ? undefined : (JSON.parse(stdout) as { ips?: { address: string }[]; code?: number; msg?: string });
  return { code, out, stderr, address: out?.ips?.[0]?.address };
}

describe("sticky keys", () => {
  it("sticky: true keeps for 300 s by default; sticky_ttl sets it; off by default", () => {
    expect(loadIpamConfig(netconf({ sticky: true }), { fs, command: "ADD" }).sticky).toEqual({ keepSeconds: 300 });
    expect(loadIpamConfig(netconf({ sticky: true, sticky_ttl: 3600 }), { fs, command: "ADD" }).sticky).toEqual({ keepSeconds: 3600 });
    expect(loadIpamConfig(netconf({}), { fs, command: "ADD" }).sticky).toBeUndefined();
    expect(loadIpamConfig(netconf({ sticky_ttl: 60 }), { fs, command: "ADD" }).warnings).toContain(
      "ipam.sticky_ttl is accepted but unused: it is the keep time of sticky: true",
    );
  });

  it.each([
    [{ sticky: "yes" }, "ipam.sticky", '"yes"'],
    [{ sticky: true, sticky_ttl: 0 }, "ipam.sticky_ttl", "0"],
    [{ sticky: true, sticky_ttl: -5 }, "ipam.sticky_ttl", "-5"],
    [{ sticky: true, sticky_ttl: 1.5 }, "ipam.sticky_ttl", "1.5"],
    [{ sticky: true, sticky_ttl: "300" }, "ipam.sticky_ttl", '"300"'],
    [{ sticky: true, sticky_ttl: 2_592_001 }, "ipam.sticky_ttl", "2592001"],
    [{ sticky: true, node_block_size: 16 }, "ipam.sticky", "true"],
  ])("refuses %j with code 7 naming the key and value", async (ipam, key, value) => {
    const { code, out } = await call(createMemoryStore(), "ADD", "c1", "u1", ipam);
    expect(code).toBe(1);
    expect(out?.code).toBe(7);
    expect(out?.msg).toContain(key);
    expect(out?.msg).toContain(value);
  });
});

describe("sticky addresses through ADD and DEL", () => {
  const sticky = { sticky: true, sticky_ttl: 600 };

  it("(a) reborn pod, old sandbox never DELeted: same address; the old sandbox's late DEL releases nothing", async () => {
    const store = createMemoryStore();
    expect((await call(store, "ADD", "old", "uid-1", sticky)).address).toBe("10.70.0.1/24");
    expect((await call(store, "ADD", "new", "uid-2", sticky)).address).toBe("10.70.0.1/24");
    expect((await call(store, "DEL", "old", "uid-1", sticky)).code).toBe(0);
    const [held] = (await store.readPool({ network: "", cidr: "10.70.0.0/24" }))?.pool.reservations() ?? [];
    expect({ container: held?.key.containerId, uid: held?.podUid, released: held?.releasedAt }).toEqual({
      container: "new",
      uid: "uid-2",
      released: undefined,
    });
  });

  it("(b) DEL first: kept for db-0, another pod gets another address, the reborn pod gets it back", async () => {
    const store = createMemoryStore();
    expect((await call(store, "ADD", "old", "uid-1", sticky)).address).toBe("10.70.0.1/24");
    expect((await call(store, "DEL", "old", "uid-1", sticky)).code).toBe(0);
    expect((await call(store, "DEL", "old", "uid-1", sticky)).code).toBe(0);
    expect((await call(store, "ADD", "web", "uid-9", sticky, "db-1")).address).toBe("10.70.0.2/24");
    expect((await call(store, "ADD", "new", "uid-2", sticky)).address).toBe("10.70.0.1/24");
  });

  it("sticky off: the reborn pod gets a fresh address (the old sandbox's entry is the reconciler's)", async () => {
    const store = createMemoryStore();
    expect((await call(store, "ADD", "old", "uid-1", {})).address).toBe("10.70.0.1/24");
    expect((await call(store, "ADD", "new", "uid-2", {})).address).toBe("10.70.0.2/24");
    expect((await call(store, "DEL", "old", "uid-1", {})).code).toBe(0);
    expect((await call(store, "ADD", "newer", "uid-3", {})).address).toBe("10.70.0.1/24");
  });
});
