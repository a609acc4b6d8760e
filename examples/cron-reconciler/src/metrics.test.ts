import { readFileSync } from "node:fs";
import { join } from "node:path";
import { attachmentKey, createIpam, parseRange } from "@ipamkit/core";
import { type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMain, startMain } from "../test/run.js";

// The built program on a real kube-apiserver, scraped over HTTP while it runs.

let kube: KubeApiserver;
beforeAll(async () => {
  kube = await startKubeApiserver();
  const store = createKubernetesStore({ kubeconfig: kube.kubeConfig, namespace: "kube-system" });
  const ipam = createIpam({ store, now: () => new Date(Date.now() - 3_600_000) });
  const range = parseRange({ range: "10.9.0.0/24" });
  // two reservations of pods that do not exist: orphans (pod-missing)
  for (const id of ["gone-a", "gone-b"]) {
    await ipam.allocate({
      ranges: [range],
      key: attachmentKey({ containerId: id, ifName: "net1" }),
      podRef: `ns/${id}`,
      podUid: `uid-${id}`,
    });
  }
  await store.close();
}, 180_000);
afterAll(async () => {
  await kube?.stop();
});

const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("--metrics-address", () => {
  it("passes, releases by reason and leader status on /metrics; /healthz answers", async () => {
    const app = startMain([
      "--kubeconfig",
      kube.kubeconfigPath,
      "--watch",
      "--metrics-address",
      "127.0.0.1:0",
      "--identity",
      "metrics-test",
    ]);
    try {
      let url: string | undefined;
      let text = "";
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        url ??= app.lines().find((l) => l.msg === "metrics listening")?.url as string | undefined;
        if (url !== undefined) {
          text = await (await fetch(`${url}/metrics`)).text();
          if ((sample(text, 'ipamkit_reconciler_passes_total{result="ok"}') ?? 0) >= 1) break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(url, JSON.stringify(app.lines())).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(sample(text, 'ipamkit_reconciler_passes_total{result="ok"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'ipamkit_reconciler_releases_total{reason="pod-missing",dry_run="false"}')).toBe(2);
      expect(sample(text, "ipamkit_reconciler_leader")).toBe(1);
      expect(sample(text, "ipamkit_reconciler_pools")).toBe(1);
      // read before or after the two releases, depending on which pass the scrape follows
      expect([0, 2]).toContain(sample(text, 'ipamkit_pool_addresses_used{network="",pool="10.9.0.0/24"}'));
      expect(sample(text, 'ipamkit_pool_addresses_capacity{network="",pool="10.9.0.0/24"}')).toBe(254);
      // every reconciler metric the Grafana dashboard (docs/grafana/ipamkit.json) queries is one it exports
      const dashboard = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "grafana", "ipamkit.json"), "utf8");
      const queried = [...new Set(dashboard.match(/ipamkit_(reconciler|pool)_[a-z_]+/g) ?? [])];
      expect(queried.length).toBeGreaterThan(4);
      for (const name of queried) expect(text, name).toContain(`# TYPE ${name} `);
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      expect(await app.stop()).toBe(0);
    }
  });

  it("is a usage error with --once or a bad address", async () => {
    const once = await runMain(["--kubeconfig", kube.kubeconfigPath, "--once", "--metrics-address", "127.0.0.1:0"]);
    expect(once.code).toBe(2);
    expect(once.stderr).toMatch(/^error: --metrics-address is not used with --once/);
    const bad = await runMain(["--kubeconfig", kube.kubeconfigPath, "--watch", "--metrics-address", "nowhere"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: --metrics-address: "nowhere" is not host:port/);
  });
});
