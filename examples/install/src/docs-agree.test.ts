import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SUPPORTED_VERSIONS } from "../../../packages/cni/src/types.js";
import { chartValues, shown } from "../../../scripts/gen-config-docs.chart.js";
import { container, reconcilerPod, template } from "../test/chart.js";
import { CHART } from "../test/helm.js";

// One source for each default: docs/configuration.md is generated (scripts/gen-config-docs.ts,
// checked by packages/cni/src/configuration-doc.test.ts); the other pages may repeat a default
// only as the code and the chart's values.yaml have it. Each check names the page and the line.

const DOCS = join(CHART, "..", "..", "docs");
const pages = readdirSync(DOCS)
  .filter((f) => f.endsWith(".md") && f !== "configuration.md")
  .map((f) => ({ file: f, lines: readFileSync(join(DOCS, f), "utf8").split("\n") }));
const defaults = new Map(chartValues().map((v) => [v.path, shown(v.default)]));

describe("the docs agree with the code and the chart's values", () => {
  it("a chart value's default, in a table's second column or as `value` (default `x`), is values.yaml's", () => {
    let checked = 0;
    for (const { file, lines } of pages) {
      lines.forEach((line, i) => {
        const cells = line.startsWith("|") ? line.split(" | ").map((c) => c.replace(/^\| ?| ?\|$/g, "")) : [];
        const [first, second] = cells;
        const path = /^`([A-Za-z.]+)`$/.exec(first ?? "")?.[1];
        if (path !== undefined && second !== undefined && defaults.has(path)) {
          expect(second.startsWith(defaults.get(path) as string), `${file}:${i + 1}: ${path} defaults to ${defaults.get(path)}`).toBe(true);
          checked++;
        }
        for (const m of line.matchAll(/`([A-Za-z.]+)` \(default (`[^`]*`)\)/g)) {
          if (!defaults.has(m[1] as string)) continue;
          expect(m[2], `${file}:${i + 1}: ${m[1]}`).toBe(defaults.get(m[1] as string));
          checked++;
        }
      });
    }
    expect(checked).toBeGreaterThanOrEqual(8); // install.md's table and operate.md's agent.required
  });

  it("the CNI versions the pages name are the ones the plugin supports", () => {
    const range = `${SUPPORTED_VERSIONS[0]} to ${SUPPORTED_VERSIONS.at(-1)}`;
    let checked = 0;
    for (const { file, lines } of pages) {
      lines.forEach((line, i) => {
        if (!/cniVersion|CNI version/.test(line)) return;
        for (const m of line.matchAll(/(\d+\.\d+\.\d+) to (\d+\.\d+\.\d+)/g)) {
          expect(m[0], `${file}:${i + 1}`).toBe(range);
          checked++;
        }
      });
    }
    expect(checked).toBeGreaterThanOrEqual(1);
  });

  it("the chart's reconciler reads its schedule from the ConfigMap the pages name (--schedule-file), with values.yaml's schedule", () => {
    const objects = template();
    const args = container(reconcilerPod(objects), "reconciler").args as string[];
    expect(args).toContain("--schedule-file=/cron-schedule/config");
    expect(args.some((a) => a.startsWith("--schedule="))).toBe(false);
    const configMap = objects.find((o) => o.kind === "ConfigMap");
    expect(`\`${configMap?.data["cron-expression"]}\``).toBe(defaults.get("reconciler.schedule"));
    const install = pages.find((p) => p.file === "install.md")?.lines.join("\n") ?? "";
    expect(install).toContain("`--schedule-file` on the chart's ConfigMap");
    const configuration = readFileSync(join(DOCS, "configuration.md"), "utf8");
    expect(configuration).toContain("the reconciler takes `--schedule` or `--schedule-file` (the chart: `reconciler.schedule`");
  });
});
