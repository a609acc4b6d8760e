import { existsSync, readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { limited } from "./cni.js";
import { MAX_STDIN, nodeSpawner, type Spawner, startNativeSpawner } from "./spawner.js";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
const native = startNativeSpawner();
afterAll(() => native.close());

for (const spawner of [native, nodeSpawner] as Spawner[]) {
  describe(`the ${spawner.kind} spawner`, () => {
    it("gives the process its stdin and exactly the environment asked for, and answers its stdout and exit code", async () => {
      const echoed = await spawner.run({ path: "cat", env: { PATH }, stdin: '{"cniVersion":"1.1.0"}' });
      expect(echoed).toMatchObject({ code: 0, stdout: '{"cniVersion":"1.1.0"}' });
      const env = await spawner.run({ path: "env", env: { PATH, CNI_COMMAND: "ADD", CNI_ARGS: "A=1;B=2" }, stdin: "" });
      expect(env.stdout.trim().split("\n").sort()).toEqual([`PATH=${PATH}`, "CNI_ARGS=A=1;B=2", "CNI_COMMAND=ADD"].sort());
      const failed = await spawner.run({ path: "sh", args: ["-c", "echo no; exit 3"], env: { PATH }, stdin: "" });
      expect(failed).toMatchObject({ code: 3, stdout: "no\n" });
    });

    it("answers 128 + the signal for a killed process and 127 for one that cannot start", async () => {
      expect((await spawner.run({ path: "sh", args: ["-c", "kill -9 $$"], env: { PATH }, stdin: "" })).code).toBe(137);
      expect((await spawner.run({ path: "/nonexistent/ipamkit", env: { PATH }, stdin: "{}" })).code).toBe(127);
    });
  });
}

describe("the native spawner", () => {
  it("answers each of many concurrent calls with its own process's output, however large", async () => {
    const results = await limited(
      32,
      Array.from({ length: 200 }, (_, i) => () => native.run({ path: "cat", env: { PATH }, stdin: `call ${i}` })),
    );
    expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 200 }, (_, i) => `call ${i}`));
    // 300 KiB of stdout: read in many pieces by the launcher, framed once
    const big = await native.run({ path: "head", args: ["-c", "307200", "/dev/zero"], env: { PATH }, stdin: "" });
    expect(big.code).toBe(0);
    expect(big.stdout.length).toBe(307200);
  });

  it("refuses a stdin larger than a pipe's buffer (it would wait on its own child) with a clear error", async () => {
    await expect(native.run({ path: "cat", env: { PATH }, stdin: "x".repeat(MAX_STDIN + 1) })).rejects.toThrow(/at most 65536/);
    expect((await native.run({ path: "cat", env: { PATH }, stdin: "still serving" })).stdout).toBe("still serving");
  });

  it("reports the process's own CPU and page faults, and is one helper process whose reaped children are the processes it ran", async () => {
    const spin = "const t = process.cpuUsage(); while (process.cpuUsage(t).user < 300000);";
    const result = await native.run({ path: process.execPath, args: ["-e", spin], env: { PATH }, stdin: "" });
    expect(result.code).toBe(0);
    expect(result.cpu).toBeGreaterThanOrEqual(0.3);
    // 128 MiB touched once: a fault per page that a process touching nothing does not have (a page
    // is 4 KiB, or 2 MiB where transparent huge pages are always on; Node's own faults vary by ~2)
    const touch = "const b = Buffer.alloc(128 * 1024 * 1024); for (let i = 0; i < b.length; i += 4096) b[i] = 1;";
    const [small, large] = await Promise.all(
      [";", touch].map((code) => native.run({ path: process.execPath, args: ["-e", code], env: { PATH }, stdin: "" })),
    );
    const thp = "/sys/kernel/mm/transparent_hugepage/enabled";
    const hugePages = existsSync(thp) && readFileSync(thp, "utf8").includes("[always]");
    const pages = (128 * 1024 * 1024) / (hugePages ? 2 * 1024 * 1024 : 4096);
    expect((large?.faults ?? 0) - (small?.faults ?? 0)).toBeGreaterThanOrEqual(pages * 0.9);
    expect(native.helperPids()).toHaveLength(1);
  });

  it("after close, has exited and refuses calls", async () => {
    const other = startNativeSpawner();
    expect((await other.run({ path: "cat", env: { PATH }, stdin: "x" })).stdout).toBe("x");
    const pid = other.helperPids()[0] as number;
    await other.close();
    expect(() => process.kill(pid, 0)).toThrow();
    expect(other.helperPids()).toEqual([]);
    await expect(other.run({ path: "cat", env: { PATH }, stdin: "x" })).rejects.toThrow(/launcher exited/);
  });
});
