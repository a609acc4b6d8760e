import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { cpuSince, processCpu } from "./cpu.js";
import { startNativeSpawner } from "./spawner.js";

/**
 * A child that spins until it has used `ms` of CPU, user and system (however busy the machine), then idles until
 * killed, or exits. (Counting user time only, the loop's own getrusage calls added an unbounded share of system time.)
 */
function spinCode(ms: number, thenExit: boolean) {
  const used = "(() => { const u = process.cpuUsage(); return u.user + u.system; })()";
  return `while (${used} < ${ms * 1000}); ${thenExit ? "" : "setInterval(() => {}, 1000);"}`;
}
function spinner(ms: number, thenExit: boolean) {
  return spawn(process.execPath, ["-e", spinCode(ms, thenExit)], { stdio: ["ignore", "ignore", "inherit"] });
}
const exited = (child: ReturnType<typeof spawn>) => new Promise((resolve) => child.once("exit", resolve));

it("reads a process's own CPU and, once reaped, its parent's children's CPU; a gone process is undefined", async () => {
  const before = processCpu("self");
  const child = spinner(400, false);
  while ((processCpu(child.pid as number)?.own ?? 0) < 0.3) await new Promise((r) => setTimeout(r, 20));
  child.kill("SIGKILL");
  await exited(child);
  expect(processCpu(child.pid as number)).toBeUndefined();
  expect((processCpu("self")?.children ?? 0) - (before?.children ?? 0)).toBeGreaterThanOrEqual(0.3);
});

it("splits a stretch's CPU: a live agent, a killed agent (counted once, not again as a CNI process), a CNI process", async () => {
  const agents = [spinner(600, false), spinner(600, false)];
  let retired = 0;
  const sources = {
    agentPids: () => agents.flatMap((a) => (a.exitCode === null && a.signalCode === null ? [a.pid as number] : [])),
    retiredAgentCpu: () => retired,
    storePid: () => undefined,
    helperPids: () => [],
  };
  const spent = cpuSince(sources);
  const spun = (a: ReturnType<typeof spawn>) => (processCpu(a.pid as number)?.own ?? 0) >= 0.6;
  while (!agents.every(spun)) await new Promise((r) => setTimeout(r, 20));
  const killed = agents[1] as ReturnType<typeof spawn>;
  retired += processCpu(killed.pid as number)?.own ?? 0;
  killed.kill("SIGKILL");
  await exited(killed);
  const cni = spinner(300, true);
  await exited(cni);
  const parts = spent();
  const live = agents[0] as ReturnType<typeof spawn>;
  const liveCpu = processCpu(live.pid as number)?.own ?? 0;
  live.kill("SIGKILL");
  await exited(live); // reaped here, not during the next test's stretch
  // both agents spun 0.6 s of CPU, started just before the stretch: the part is their whole CPU, less what they
  // had spent of their Node start when it began (well under 0.2 s each); counting the killed one twice adds 0.6 s
  expect(liveCpu).toBeGreaterThanOrEqual(0.6);
  expect(parts.agents).toBeLessThanOrEqual(liveCpu + retired + 0.02);
  expect(parts.agents).toBeGreaterThan(liveCpu + retired - 0.4);
  // the CNI process spun 0.3 s (plus its Node start); the killed agent's ~0.7 s is not counted in it
  expect(parts.cni).toBeGreaterThan(0.25);
  expect(parts.cni).toBeLessThan(0.9);
  expect(parts.store).toBe(0);
  expect(parts.machine).toBeGreaterThanOrEqual(parts.cni + parts.agents - 0.1);
});

it("counts a CNI process started by the native spawner (reaped by its launcher, not by this process) as a CNI process", async () => {
  const spawner = startNativeSpawner();
  try {
    const sources = { agentPids: () => [], retiredAgentCpu: () => 0, storePid: () => undefined, helperPids: () => spawner.helperPids() };
    const spent = cpuSince(sources);
    const result = await spawner.run({ path: process.execPath, args: ["-e", spinCode(300, true)], env: {}, stdin: "" });
    const parts = spent();
    expect(result.code).toBe(0);
    // reaped by the launcher, not by this process: without the helper's children it would be ~0.
    // It spun 0.3 s by getrusage; /proc counts whole ticks of 10 ms, so allow one tick (and float error).
    expect(parts.cni).toBeGreaterThanOrEqual(0.28);
    expect(parts.cni).toBeLessThan(0.9);
    expect(parts.agents).toBe(0);
  } finally {
    await spawner.close();
  }
});
