import { attachmentKey, createIpam, createMemoryStore, type IpamStore, PoolCorruptError, parseRange } from "@ipamkit/core";
import { expect, it } from "vitest";
import { dispatch } from "./dispatcher.js";

// Found by the corrupted-data campaign (RELIABILITY.md): GC on a node-local store whose pool is
// corrupt answered 11 ("try again later"), which a retry can never fix. It continues past the
// corrupt pool as before, and then answers 102 naming it.

function storeWithCorruptPool(store: IpamStore, cidr: string): IpamStore {
  return {
    ...store,
    async readPool(ref) {
      if (ref.cidr === cidr) throw new PoolCorruptError(ref.cidr, "two reservations at 10.62.0.1 (a/net1 and b/net1)");
      return store.readPool(ref);
    },
  };
}

it("GC over a corrupt pool continues past it and answers 102 naming it, not 11", async () => {
  const memory = createMemoryStore();
  const other = parseRange({ range: "10.63.0.0/24" });
  await createIpam({ store: memory }).allocate({ ranges: [other], key: attachmentKey({ containerId: "gone", ifName: "net1" }) });
  let stdout = "";
  const code = await dispatch({
    env: { CNI_COMMAND: "GC" },
    stdin: async () =>
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "n",
        ipam: { type: "ipamkit", range: "10.62.0.0/24", ipRanges: [{ range: "10.63.0.0/24" }] },
        "cni.dev/valid-attachments": [],
      }),
    stdout: (text) => {
      stdout += text;
    },
    stderr: () => undefined,
    fs: { exists: () => false, readText: () => "" },
    openStore: async () => storeWithCorruptPool(memory, "10.62.0.0/24"),
  });
  // the healthy range was collected all the same
  expect((await memory.readPool({ network: "", cidr: "10.63.0.0/24" }))?.pool.size).toBe(0);
  expect(code).toBe(1);
  const error = JSON.parse(stdout) as { code: number; msg: string };
  expect(error.code).toBe(102);
  expect(error.msg).toContain("10.62.0.0/24");
});

// A Whereabouts < 0.8 entry has no ifname: it belongs to one of its container's interfaces, so a
// container listed in valid-attachments keeps it; a legacy entry of a container not listed goes.
it("GC keeps a legacy entry (no ifname) of a valid container and frees one of a gone container", async () => {
  const memory = createMemoryStore();
  const range = parseRange({ range: "10.64.0.0/24" });
  const legacy = (containerId: string) => attachmentKey({ containerId, ifName: "" }, { allowLegacy: true });
  const ipam = createIpam({ store: memory });
  await ipam.allocate({ ranges: [range], key: legacy("live") });
  await ipam.allocate({ ranges: [range], key: legacy("gone") });
  const code = await dispatch({
    env: { CNI_COMMAND: "GC" },
    stdin: async () =>
      JSON.stringify({
        cniVersion: "1.1.0",
        name: "n",
        ipam: { type: "ipamkit", range: "10.64.0.0/24" },
        "cni.dev/valid-attachments": [{ containerID: "live", ifname: "net1" }],
      }),
    stdout: () => undefined,
    stderr: () => undefined,
    fs: { exists: () => false, readText: () => "" },
    openStore: async () => memory,
  });
  expect(code).toBe(0);
  const left = (await memory.readPool({ network: "", cidr: "10.64.0.0/24" }))?.pool.reservations() ?? [];
  expect(left.map((r) => r.key.containerId)).toEqual(["live"]);
});
