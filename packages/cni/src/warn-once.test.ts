import { createMemoryStore } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { dispatch } from "./dispatcher.js";
import { createWarnOnce } from "./warn-once.js";

// A config's warnings are printed once per network and process: the plugin binary (one process a
// call) prints them on every call, a long-lived agent only the first time it meets them.

it("prints a config's warnings on the first call of a process only, and again for another network", async () => {
  const store = createMemoryStore();
  const warnOnce = createWarnOnce();
  const call = async (id: string, name: string) => {
    let stderr = "";
    const code = await dispatch({
      env: { CNI_COMMAND: "ADD", CNI_CONTAINERID: id, CNI_IFNAME: "net1", CNI_NETNS: "/var/run/netns/x", CNI_PATH: "/opt/cni/bin" },
      stdin: async () =>
        JSON.stringify({ cniVersion: "1.0.0", name, ipam: { type: "whereabouts", range: "10.64.0.0/24", subnet: "10.64.0.0/24" } }),
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text;
      },
      fs: { exists: () => false, readText: () => "" },
      openStore: async () => store,
      warnOnce,
    });
    expect(code).toBe(0);
    return stderr;
  };
  expect(await call("a", "net-a")).toContain("ipamkit: warning: ipam.subnet");
  expect(await call("b", "net-a")).not.toContain("ipam.subnet");
  expect(await call("c", "net-b")).toContain("ipamkit: warning: ipam.subnet");
});

describe("createWarnOnce", () => {
  it("passes each line once per network, and again for another network", () => {
    const once = createWarnOnce();
    expect(once.fresh("net1/", ["a", "b"])).toEqual(["a", "b"]);
    expect(once.fresh("net1/", ["a", "c"])).toEqual(["c"]);
    expect(once.fresh("net2/", ["a"])).toEqual(["a"]);
  });
  it("starts again past its limit rather than growing without bound", () => {
    const once = createWarnOnce(2);
    once.fresh("n", ["a", "b"]);
    expect(once.fresh("n", ["c"])).toEqual(["c"]);
    expect(once.fresh("n", ["a"])).toEqual(["a"]);
  });
});
