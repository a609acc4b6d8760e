import { agentStats } from "@ipamkit/agent";
import { afterAll, expect, it } from "vitest";
import { DEFAULT_AGENTS_PER_PROCESS, openSimStore, type StoreKind, startCluster } from "./cluster.js";
import { type ReconcilerMode, reconcilerFor } from "./reconciler-run.js";
import { ipamShare } from "./requests.js";
import { runScenario } from "./scenario.js";
import { startNativeSpawner } from "./spawner.js";

// The bounded form of `pnpm sim` that CI runs: every phase on every store, 2 networks per pod,
// through the built binary and real agents; the independent audit must find nothing wrong.
// The Kubernetes store also runs on the real kube-apiserver, and with per-node blocks (of 8 addresses: each node claims several;
// etcd and the file store pass the same blocks in the conformance suite). The nodes' agents are
// hollow nodes (src/hollow-nodes.ts), each its node's own: by default (10 per process) the 4 nodes
// share one process; etcd with blocks runs them 2 per process; plain etcd runs the product agent,
// dist/ipamkit-agent, one process per node as deployed (--agents-per-process 1).
// The power-cycle's reconciler runs as `pnpm sim` runs it, as the built program in its own process
// (examples/cron-reconciler --once), on every store; once also inside this process.
const cases: { kind: StoreKind; blocks?: number; perProcess?: number; reconciler?: ReconcilerMode }[] = [
  { kind: "etcd", perProcess: 1 },
  { kind: "kubernetes" },
  { kind: "file" },
  { kind: "kubernetes", blocks: 8 },
  { kind: "etcd", blocks: 8, perProcess: 2 },
  { kind: "kubernetes", reconciler: "in-process" },
  // pools and pods on the suite's real kube-apiserver (test-infra/kube-apiserver), per-node blocks
  { kind: "kube-apiserver", blocks: 8 },
];
// CNI processes started as `pnpm sim` starts them: by the native spawner (src/launcher.c)
const spawner = startNativeSpawner();
afterAll(() => spawner.close());
for (const { kind, blocks, perProcess, reconciler = "program" } of cases) {
  const label =
    (blocks === undefined ? kind : `${kind} with per-node blocks of ${blocks}`) +
    (perProcess === undefined
      ? ""
      : perProcess === 1
        ? ", the product agent, a process per node"
        : `, ${perProcess} nodes' agents per process`) +
    (reconciler === "program" ? "" : ", the reconciler in-process");
  it(`${label}: create, re-create, power-cycle + reconcile, delete — nothing held twice, lost or leaked`, async () => {
    const cluster = await startCluster(kind, kind === "file" ? 1 : 4, {
      spawner,
      ...(blocks === undefined ? {} : { nodeBlockSize: blocks }),
      ...(perProcess === undefined ? {} : { agentsPerProcess: perProcess }),
    });
    const store = await openSimStore(cluster);
    try {
      await cluster.startAgents(4);
      expect(cluster.agentPids().length).toBe(Math.ceil(cluster.nodes.length / (perProcess ?? DEFAULT_AGENTS_PER_PROCESS)));
      const reconcile = reconcilerFor(reconciler, cluster, store);
      const results = await runScenario(cluster, { pods: 24, networks: 2, concurrency: 8, reconcile });
      expect(results.map((r) => r.phase)).toEqual([
        "create all",
        "delete all and re-create",
        "power-cycle every node, then reconcile",
        "delete all",
      ]);
      for (const r of results) {
        expect(r.failed, r.phase).toBe(0);
        expect(r.audit, r.phase).toEqual({ heldTwice: 0, lost: 0, leaked: 0 });
      }
      const cycle = results[2];
      // the dead sandboxes were leaked until the reconciler ran, and it released exactly those
      expect(cycle?.leakedBeforeReconcile).toBe(48);
      expect(cycle?.reconciled).toBe(48);
      // the reconciler program's own CPU is counted apart, in the simulation's part; in-process, none
      if (reconciler === "program") expect(cycle?.reconcilerCpu).toBeGreaterThan(0);
      else expect(cycle?.reconcilerCpu).toBeUndefined();
      // its parts are timed within it
      const parts = cycle?.parts ?? {};
      expect(Object.keys(parts)).toEqual(["agents restarted", "ADDs", "reconcile"]);
      const sum = Object.values(parts).reduce((a, b) => a + b, 0);
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThanOrEqual(cycle?.seconds ?? 0);
      // the audit before the reconcile was timed apart, and left out of the phase's seconds
      expect(cycle?.auditing).toBeGreaterThan(0);
      expect(results.filter((r) => r.auditing !== undefined)).toEqual([cycle]);
      expect(results[0]?.adds).toBe(48);
      // every phase's CPU, by part: the agents restarted in the power-cycle count, etcd only on etcd
      for (const r of results) {
        expect(r.cpu.cni, r.phase).toBeGreaterThan(0);
        expect(r.cpu.agents, r.phase).toBeGreaterThan(0);
        expect(r.cpu.harness, r.phase).toBeGreaterThan(0);
        expect(r.cpu.store > 0, r.phase).toBe(kind === "etcd");
      }
      expect(cycle?.cpu.agents).toBeGreaterThan(results[3]?.cpu.agents ?? Infinity);
      // each phase's requests as the store's server counted them: on Kubernetes by verb and resource
      // (the pods' own are exact), on etcd by RPC; per step, the calls it made
      if (kind === "kubernetes" || kind === "kube-apiserver") {
        expect(results[0]?.requests).toMatchObject({ "create pods": 24, "update pods/status": 24 });
        expect(results[2]?.requests).toMatchObject({ "delete pods": 24, "create pods": 24 });
        expect(Object.keys(results[0]?.requests ?? {}).some((k) => k.endsWith(" ippools"))).toBe(true);
        expect(results[1]?.steps?.DEL?.requests).toMatchObject({ "delete pods": 24 });
        expect(results[1]?.steps?.ADD?.requests).toMatchObject({ "create pods": 24 });
      } else if (kind === "etcd") {
        expect(results[0]?.requests?.Txn).toBeGreaterThanOrEqual(48);
      } else for (const r of results) expect(r.requests, r.phase).toBeUndefined();
      if (kind !== "file") {
        expect(results.map((r) => [r.steps?.DEL?.calls, r.steps?.ADD?.calls])).toEqual([
          [undefined, 48],
          [48, 48],
          [undefined, 48],
          [48, undefined],
        ]);
        // every ADD and DEL makes at least one request of its own (its pool write or transaction)
        for (const step of results.flatMap((r) => Object.values(r.steps ?? {})))
          expect(Object.values(ipamShare(step.requests)).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(step.calls);
      }
      // each node's calls went to its own agent, hosted with others or not
      for (const node of cluster.nodes) expect((await agentStats(node.socket)).requests, node.name).toBeGreaterThan(0);
    } finally {
      await store.close();
      await cluster.close();
    }
  });
}
