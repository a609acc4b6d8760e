import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT, type AgentProcess, startAgentProcess } from "../test/agent-process.js";
import { onNode, useNode } from "../test/node-files.js";
import { cniEnv, runPlugin } from "../test/run-plugin.js";

// Scrapes a real agent process (dist/ipamkit-agent) after real calls through the binary.

let dir: string;
let agent: AgentProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-agent-metrics-"));
  useNode(dir);
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "run", "agent.sock");
const netconf = {
  cniVersion: "1.1.0",
  name: "metrics-net",
  // a /30: two addresses, so the third ADD fails (a CNI error code)
  ipam: {
    type: "ipamkit",
    range: "10.61.0.0/30",
    data_dir: join("DIR", "store"),
    configuration_path: "DIR",
    agent_socket: "SOCK",
    agent_required: true,
  },
};
const conf = () => {
  const parsed = JSON.parse(JSON.stringify(netconf).replaceAll("DIR", dir).replaceAll("SOCK", socketPath())) as {
    ipam: Record<string, unknown>;
  };
  // the agent's keys are the node's: its flat file (issue 47)
  return { ...parsed, ipam: onNode(parsed.ipam) };
};

/** The URL the agent logged for its metrics server. */
async function metricsUrl(process: AgentProcess): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = process
      .log()
      .split("\n")
      .find((l) => l.includes('"msg":"metrics listening"'));
    if (line !== undefined) return (JSON.parse(line) as { url: string }).url;
    if (Date.now() > deadline) throw new Error(`no "metrics listening" line:\n${process.log()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The value of one sample line, e.g. `ipamkit_cni_calls_total{command="ADD",code="0"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every ipamkit_* metric the Grafana dashboard's queries name. */
function dashboardMetrics(): string[] {
  const dashboard = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "grafana", "ipamkit.json"), "utf8")) as {
    panels: { targets?: { expr: string }[] }[];
  };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  return [...new Set(exprs.flatMap((e) => e.match(/ipamkit_[a-z_]+/g) ?? []))].sort();
}

/** True when a scrape declares the metric (a histogram's `_bucket` by its base name). */
const exported = (text: string, name: string) =>
  text.includes(`# TYPE ${name} `) || text.includes(`# TYPE ${name.replace(/_bucket$/, "")} histogram`);

describe("agent metrics (--metrics-address)", () => {
  it("counts calls by command and result code, their latency, and store requests; /healthz answers", async () => {
    agent = await startAgentProcess(socketPath(), { args: ["--metrics-address", "127.0.0.1:0"] });
    const url = await metricsUrl(agent);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const id of ["m1", "m2"]) expect((await runPlugin(cniEnv("ADD", id), conf())).code).toBe(0);
    const full = await runPlugin(cniEnv("ADD", "m3"), conf());
    expect(full.code).toBe(1);
    const code = (full.json as { code: number }).code;
    expect((await runPlugin(cniEnv("DEL", "m1"), conf())).code).toBe(0);

    const response = await fetch(`${url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(sample(text, 'ipamkit_cni_calls_total{command="ADD",code="0"}')).toBe(2);
    expect(sample(text, `ipamkit_cni_calls_total{command="ADD",code="${code}"}`)).toBe(1);
    expect(sample(text, 'ipamkit_cni_calls_total{command="DEL",code="0"}')).toBe(1);
    expect(sample(text, 'ipamkit_cni_call_duration_seconds_count{command="ADD"}')).toBe(3);
    expect(sample(text, 'ipamkit_cni_call_duration_seconds_bucket{le="10",command="ADD"}')).toBe(3);
    expect(sample(text, 'ipamkit_store_requests_total{store="storage-file",op="writePool",result="ok"}')).toBeGreaterThanOrEqual(3);
    expect(sample(text, "ipamkit_store_conflicts_retried_total")).toBe(0);
    expect(sample(text, "ipamkit_agent_stores")).toBe(1);
    expect(text).toMatch(/^ipamkit_agent_process_resident_memory_bytes \d+/m);

    // every agent metric the Grafana dashboard (docs/grafana/ipamkit.json) queries is one the agent exports
    // (the reconciler's own, ipamkit_reconciler_* and the pool gauges ipamkit_pool_*, are checked by its scrape test)
    for (const name of dashboardMetrics().filter((m) => !m.startsWith("ipamkit_reconciler_") && !m.startsWith("ipamkit_pool_"))) {
      expect(exported(text, name), name).toBe(true);
    }

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("ok\n");
    expect((await fetch(`${url}/other`)).status).toBe(404);
  });

  it("is off unless configured; a bad address is a one-line usage error", async () => {
    agent = await startAgentProcess(socketPath());
    expect((await runPlugin(cniEnv("ADD", "o1"), conf())).code).toBe(0);
    expect(agent.log()).not.toMatch(/metrics listening/);
    const bad = spawnSync(AGENT, ["--socket", join(dir, "b.sock"), "--metrics-address", "localhost"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr.split("\n")[0]).toBe(
      'error: --metrics-address: "localhost" is not host:port (e.g. 127.0.0.1:9464, [::1]:9464, :9464)',
    );
  });
});
