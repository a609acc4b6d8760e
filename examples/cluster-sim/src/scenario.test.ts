import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { createFileStore } from "@ipamkit/storage-file";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { expect, it } from "vitest";
import { POOL_NAMESPACE, type StoreKind, startCluster } from "./cluster.js";
import { limited } from "./cni.js";
import { runScenario } from "./scenario.js";

// The bounded form of `pnpm sim` that CI runs: every phase on every store, 2 networks per pod,
// through the built binary and real agents; the independent audit must find nothing wrong.
// The Kubernetes store also runs with per-node blocks (of 8 addresses: each node claims several;
// etcd and the file store pass the same blocks in the conformance suite).
const cases: { kind: StoreKind; blocks?: number }[] = [
  { kind: "etcd" },
  { kind: "kubernetes" },
  { kind: "file" },
  { kind: "kubernetes", blocks: 8 },
];
for (const { kind, blocks } of cases) {
  const label = blocks === undefined ? kind : `${kind} with per-node blocks of ${blocks}`;
  it(`${label}: create, re-create, power-cycle + reconcile, delete — nothing held twice, lost or leaked`, async () => {
    const cluster = await startCluster(kind, kind === "file" ? 1 : 4, blocks === undefined ? {} : { nodeBlockSize: blocks });
    const store: IpamStore =
      kind === "etcd"
        ? createEtcdStore({ endpoints: [cluster.etcd?.endpoint ?? ""] })
        : kind === "kubernetes"
          ? createKubernetesStore({ kubeconfig: cluster.kubeConfig, namespace: POOL_NAMESPACE })
          : createFileStore({ dir: join(cluster.dir, "store") });
    try {
      await limited(
        4,
        cluster.nodes.map((node) => () => cluster.startAgent(node)),
      );
      const results = await runScenario(cluster, { pods: 24, networks: 2, concurrency: 8, store });
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
      expect(results[0]?.adds).toBe(48);
    } finally {
      await store.close();
      await cluster.close();
    }
  });
}
