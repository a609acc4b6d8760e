import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgentMetrics } from "@ipamkit/agent/metrics";
import { delegatingStore } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { parser } from "@prometheus-io/lezer-promql";
import type { Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { createReconcilerMetrics } from "../../cron-reconciler/src/metrics.js";
import { ALL_ON, find, refusal, template } from "../test/chart.js";
import type { Rendered } from "../test/helm.js";
import { monitoringCheckBinary } from "../test/monitoring.js";
import { removeTempDirs } from "../test/run.js";

// The ServiceMonitor and PrometheusRule (metrics.serviceMonitor, metrics.prometheusRule): every
// expression parses as PromQL (Prometheus' own grammar, @prometheus-io/lezer-promql), and every
// metric and label it selects on is one the agent's or the reconciler's registry really exports,
// with the label values the code really produces. No Prometheus Operator CRDs on the test
// kube-apiserver: these two objects are not applied there, but decoded strictly into the
// operator's own Go types (test-infra/monitoring).

afterAll(removeTempDirs);

/** Labels Prometheus adds to every scraped series (target labels a ServiceMonitor sets). */
const TARGET_LABELS = new Set(["job", "namespace", "instance", "pod", "service", "endpoint", "container"]);

/** Syntax errors of a PromQL expression (the parser's error nodes), with where they are. */
function promqlErrors(expr: string): string[] {
  const errors: string[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`at ${node.from}: ${JSON.stringify(expr.slice(node.from, node.from + 20))}`);
    },
  });
  return errors;
}

/** `name{label op "value", …}` selectors of an expression. */
function selectors(expr: string): { name: string; labels: { label: string; op: string; value: string }[] }[] {
  return [...expr.matchAll(/\b(ipamkit_[a-z_]+|up)(?:\{([^}]*)\})?/g)].map((m) => ({
    name: m[1] as string,
    labels: [...(m[2] ?? "").matchAll(/([a-z_]+)\s*(=~|!=|=)\s*"([^"]*)"/g)].map((l) => ({
      label: l[1] as string,
      op: l[2] as string,
      value: l[3] as string,
    })),
  }));
}

/** The label names of a registry's metric (a histogram's series by its base name). */
function labelNames(registries: Registry[], name: string): string[] | undefined {
  for (const registry of registries) {
    const metric = registry.getSingleMetric(name) ?? registry.getSingleMetric(name.replace(/_bucket$/, ""));
    if (metric !== undefined) return [...((metric as unknown as { labelNames: string[] }).labelNames ?? [])];
  }
  return undefined;
}

/** monitoring-check's answer for these objects: its exit code and its lines. */
function checkTypes(objects: Rendered[]): { code: number | null; lines: string[] } {
  const r = spawnSync(monitoringCheckBinary(), [], { input: JSON.stringify(objects), encoding: "utf8" });
  return { code: r.status, lines: `${r.stdout}${r.stderr}`.split("\n").filter((l) => l !== "") };
}

describe("the PrometheusRule and ServiceMonitor", () => {
  it("decode strictly into the Prometheus Operator's own types (kubeconform -strict for these kinds), with every value set", () => {
    const sets = [
      ALL_ON,
      [...ALL_ON, "--set", "metrics.serviceMonitor.labels.release=prom", "--set", "metrics.prometheusRule.labels.team=net"],
    ];
    for (const values of sets) {
      const monitoring = template(values).filter((o) => o.apiVersion.startsWith("monitoring.coreos.com/"));
      expect(monitoring.map((o) => o.kind).sort()).toEqual(["PrometheusRule", "ServiceMonitor"]);
      expect(checkTypes(monitoring)).toEqual({ code: 0, lines: [] });
    }
    // the check can fail: a misspelt field, a wrong type
    const [monitor, rule] = ["ServiceMonitor", "PrometheusRule"].map((kind) => structuredClone(find(template(ALL_ON), kind, "ipamkit")));
    (monitor as Rendered).spec.endpoints[0].intervall = "10s";
    (rule as Rendered).spec.groups[0].rules[0].for = 300;
    const bad = checkTypes([monitor as Rendered, rule as Rendered]);
    expect(bad.code).toBe(1);
    expect(bad.lines).toEqual([
      'ServiceMonitor/ipamkit: json: unknown field "intervall"',
      "PrometheusRule/ipamkit: json: cannot unmarshal number into Go struct field Rule.spec.groups.rules.for of type v1.Duration",
    ]);
  });

  it("the ServiceMonitor scrapes both metrics Services by their port name", () => {
    const objects = template([...ALL_ON, "--set", "metrics.serviceMonitor.labels.release=prom"]);
    const monitor = find(objects, "ServiceMonitor", "ipamkit");
    expect(monitor.metadata.labels?.release).toBe("prom");
    expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s" }]);
    const services = objects.filter((o) => o.kind === "Service");
    const selected = services.filter((s) =>
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
    );
    expect(selected.map((s) => s.metadata.name).sort()).toEqual(["ipamkit-node-metrics", "ipamkit-reconciler-metrics"]);
    for (const s of selected) expect(s.spec.ports.map((p: Rendered) => p.name)).toContain("metrics");
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: ["ipamkit-system"] });
  });

  it("every alert parses as PromQL and selects only metrics, labels and label values the programs export", async () => {
    const objects = template(ALL_ON);
    const rule = find(objects, "PrometheusRule", "ipamkit");
    const rules = rule.spec.groups.flatMap((g: Rendered) => g.rules) as { alert: string; expr: string }[];
    expect(rules.map((r) => r.alert)).toEqual([
      "IpamkitAgentDown",
      "IpamkitStoreErrors",
      "IpamkitPoolNearlyFull",
      "IpamkitReconcileFailed",
      "IpamkitAuditFindings",
      "IpamkitReconcilerNoLeader",
    ]);

    // the label values the code produces: a store request that failed, a pass with failures, one that threw
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-chart-metrics-"));
    const agent = createAgentMetrics();
    const reconciler = createReconcilerMetrics();
    try {
      const file = createFileStore({ dir });
      const broken = agent.countStore(
        delegatingStore(file, {
          readPool: async () => {
            throw new Error("disk gone");
          },
        }),
      );
      await expect(broken.readPool({ network: "", cidr: "10.0.0.0/30" })).rejects.toThrow("disk gone");
      const report = {
        dryRun: false,
        pools: 1,
        reservations: 0,
        released: [],
        kept: 0,
        skipped: [],
        failed: [{ subject: "x", error: new Error("y") }],
        usage: [{ pool: { network: "n", cidr: "10.0.0.0/30" }, used: 1, capacity: 2 }],
        claims: { repaired: [{ kind: "entry-without-claim" }], skipped: [], young: 0 },
      } as unknown as Parameters<typeof reconciler.pass>[0];
      reconciler.pass(report);
      reconciler.passFailed();
      reconciler.leading(true);
      const scraped = `${await agent.registry.metrics()}\n${await reconciler.registry.metrics()}`;

      const services = new Set(objects.filter((o) => o.kind === "Service").map((o) => o.metadata.name));
      for (const { alert, expr } of rules) {
        expect(promqlErrors(expr), alert).toEqual([]);
        for (const selector of selectors(expr)) {
          if (selector.name === "up") {
            const job = selector.labels.find((l) => l.label === "job");
            expect(services.has(job?.value ?? ""), `${alert}: up{job} names a metrics Service`).toBe(true);
            continue;
          }
          const labels = labelNames([agent.registry, reconciler.registry], selector.name);
          expect(labels, `${alert}: ${selector.name} is exported`).toBeDefined();
          for (const { label, op, value } of selector.labels) {
            if (TARGET_LABELS.has(label)) continue;
            expect(labels, `${alert}: ${selector.name} has label ${label}`).toContain(label);
            const values = op === "=~" ? value.split("|") : [value];
            for (const v of values) expect(scraped, `${alert}: ${selector.name}{${label}="${v}"} is produced`).toContain(`${label}="${v}"`);
          }
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the pool threshold and the rule's labels are the values'", () => {
    const rule = find(
      template([...ALL_ON, "--set", "metrics.prometheusRule.poolUsageThreshold=0.75", "--set", "metrics.prometheusRule.labels.team=net"]),
      "PrometheusRule",
      "ipamkit",
    );
    expect(rule.metadata.labels?.team).toBe("net");
    const full = rule.spec.groups[0].rules.find((r: Rendered) => r.alert === "IpamkitPoolNearlyFull");
    expect(full.expr).toContain("> 0.75");
    expect(refusal([...ALL_ON, "--set", "metrics.prometheusRule.poolUsageThreshold=1.5"])).toContain(
      "at '/metrics/prometheusRule/poolUsageThreshold'",
    );
    expect(refusal([...ALL_ON, "--set-json", "metrics.prometheusRule.poolUsageThreshold=0"])).toContain(
      "at '/metrics/prometheusRule/poolUsageThreshold'",
    );
    // no alert on what is not there
    const agentOnly = find(template([...ALL_ON, "--set", "reconciler.enabled=false"]), "PrometheusRule", "ipamkit");
    expect(agentOnly.spec.groups[0].rules.map((r: Rendered) => r.alert)).toEqual(["IpamkitAgentDown", "IpamkitStoreErrors"]);
    expect(refusal([...ALL_ON, "--set", "reconciler.enabled=false", "--set", "agent.metrics.enabled=false"])).toContain(
      "metrics.prometheusRule needs agent.metrics.enabled or reconciler.enabled: nothing to alert on",
    );
  });
});
