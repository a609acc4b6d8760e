import { createMemoryStore } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { dispatch } from "./dispatcher.js";

// Regressions found by the fuzz campaign (RELIABILITY.md): hostile input must end as a CNI error
// naming what is wrong — never an internal error, never an answer that echoes a huge value.

async function run(env: Record<string, string | undefined>, stdin: string): Promise<{ code: number; stdout: string }> {
  let stdout = "";
  const code = await dispatch({
    env,
    stdin: async () => stdin,
    stdout: (text) => {
      stdout += text;
    },
    stderr: () => undefined,
    fs: { exists: () => false, readText: () => "" },
    openStore: async () => createMemoryStore(),
  });
  return { code, stdout };
}

const ENV = { CNI_COMMAND: "ADD", CNI_CONTAINERID: "c1", CNI_IFNAME: "net1", CNI_NETNS: "/var/run/netns/x" };
const conf = (ipam: string) => `{"cniVersion":"1.0.0","name":"n","ipam":${ipam}}`;
const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("deeply nested JSON", () => {
  for (const [where, stdin] of [
    ["ipam", conf(deepArray(20_000))],
    ["ipam.range", conf(`{"type":"ipamkit","range":${deepArray(20_000)}}`)],
    ["cniVersion", `{"cniVersion":${deepArray(50_000)},"name":"n","ipam":{"type":"ipamkit","range":"10.0.0.0/24"}}`],
  ] as const) {
    it(`an array nested 20 000+ deep at ${where} is config error 7 naming the key, not an internal error`, async () => {
      const r = await run(ENV, stdin);
      expect(r.code).toBe(1);
      const error = JSON.parse(r.stdout) as { code: number; msg: string };
      expect(error.code).toBe(7);
      expect(error.msg).toContain(where);
      expect(r.stdout.length).toBeLessThan(1_000);
    });
  }
});

describe("oversized environment values are quoted shortened", () => {
  const huge = "y".repeat(200_000);
  for (const [name, env] of [
    ["CNI_COMMAND", { ...ENV, CNI_COMMAND: huge }],
    ["CNI_CONTAINERID", { ...ENV, CNI_CONTAINERID: `-${huge}` }],
    ["CNI_IFNAME", { ...ENV, CNI_IFNAME: huge }],
  ] as const) {
    it(`a 200 000-character ${name}: code 4 naming it, in an answer under 1 KB`, async () => {
      const r = await run(env, conf('{"type":"ipamkit","range":"10.0.0.0/24"}'));
      expect(r.code).toBe(1);
      const error = JSON.parse(r.stdout) as { code: number; msg: string };
      expect(error.code).toBe(4);
      expect(error.msg).toContain(name === "CNI_COMMAND" ? "CNI_COMMAND" : name);
      expect(error.msg).toContain("yyyyyyyy");
      expect(r.stdout.length).toBeLessThan(1_000);
    });
  }

  for (const [what, args] of [
    ["an unknown key", `${"K".repeat(100_000)}=1`],
    ["many unknown keys", Array.from({ length: 5_000 }, (_, i) => `UNKNOWN_${i}=1`).join(";")],
    ["a pair without '='", "x".repeat(100_000)],
    ["a bad IP", `IP=${"1".repeat(100_000)}`],
    ["a bad IgnoreUnknown", `IgnoreUnknown=${"t".repeat(100_000)}`],
  ] as const) {
    it(`CNI_ARGS with ${what}: a CNI error in an answer under 1 KB`, async () => {
      const r = await run({ ...ENV, CNI_ARGS: args }, conf('{"type":"ipamkit","range":"10.0.0.0/24"}'));
      expect(r.code).toBe(1);
      expect([2, 7]).toContain((JSON.parse(r.stdout) as { code: number }).code);
      expect(r.stdout.length).toBeLessThan(1_000);
    });
  }
});

describe("oversized lists", () => {
  const many = Array.from({ length: 60_000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`);
  for (const [where, extra] of [
    ["runtimeConfig.ips", { runtimeConfig: { ips: many } }],
    ["args.cni.ips", { args: { cni: { ips: many } } }],
  ] as const) {
    it(`60 000 requested addresses in ${where} are answered in linear time (a CNI error in seconds, not 10+ s)`, async () => {
      const stdin = JSON.stringify({ cniVersion: "1.0.0", name: "n", ipam: { type: "ipamkit", range: "10.0.0.0/8" }, ...extra });
      const started = performance.now();
      const r = await run(ENV, stdin);
      const ms = performance.now() - started;
      expect(r.code).toBe(1);
      expect(r.stdout.length).toBeLessThan(1_000);
      expect(ms).toBeLessThan(4_000);
    });
  }
  it("60 000 addresses in CNI_ARGS IP= are answered in linear time", async () => {
    const started = performance.now();
    const r = await run({ ...ENV, CNI_ARGS: `IP=${many.join(",")}` }, conf('{"type":"ipamkit","range":"10.0.0.0/8"}'));
    expect(r.code).toBe(1);
    expect(r.stdout.length).toBeLessThan(1_000);
    expect(performance.now() - started).toBeLessThan(4_000);
  });
});

describe("variables a command does not use are not validated", () => {
  for (const command of ["GC", "STATUS"] as const) {
    it(`${command} with a malformed CNI_CONTAINERID and CNI_IFNAME (which it does not use) succeeds`, async () => {
      const stdin = JSON.stringify({
        cniVersion: "1.1.0",
        name: "n",
        ipam: { type: "ipamkit", range: "10.0.0.0/24" },
        "cni.dev/valid-attachments": [],
      });
      const r = await run({ CNI_COMMAND: command, CNI_CONTAINERID: "-", CNI_IFNAME: "a/b" }, stdin);
      expect(r.stdout).toBe("");
      expect(r.code).toBe(0);
    });
  }
});
