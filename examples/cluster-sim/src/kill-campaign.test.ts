import { join } from "node:path";
import type { IpamStore } from "@ipamkit/core";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { createFileStore } from "@ipamkit/storage-file";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { expect, it } from "vitest";
import { POOL_NAMESPACE, type StoreKind, startCluster } from "./cluster.js";
import { runKillCampaign } from "./kill-campaign.js";

// The SIGKILL campaign of RELIABILITY.md: bounded here (CI); RELIABILITY=full aims at 100 kills per store.
const KILLS = process.env.RELIABILITY === "full" ? 110 : 12;

for (const kind of ["file", "etcd", "kubernetes"] as StoreKind[]) {
  it(`${kind}: CNI processes SIGKILLed mid-ADD and mid-DEL leave a clean store; dead attachments are freed`, async () => {
    const cluster = await startCluster(kind, 1);
    const store: IpamStore =
      kind === "etcd"
        ? createEtcdStore({ endpoints: [cluster.etcd?.endpoint ?? ""] })
        : kind === "kubernetes"
          ? createKubernetesStore({ kubeconfig: cluster.kubeConfig, namespace: POOL_NAMESPACE })
          : createFileStore({ dir: join(cluster.dir, "store") });
    try {
      const r = await runKillCampaign(cluster, { kills: KILLS, store });
      console.info(`[reliability] kill campaign ${kind}: ${JSON.stringify(r)}`);
      expect(r.killed).toBeGreaterThanOrEqual(Math.floor(KILLS / 2));
      expect(r.killedAdds).toBeGreaterThan(0);
      expect({ heldTwice: r.heldTwice, lost: r.lost, unreadable: r.unreadable, deadHeldAfter: r.deadHeldAfter }).toEqual({
        heldTwice: 0,
        lost: 0,
        unreadable: 0,
        deadHeldAfter: 0,
      });
      expect(r.released).toBe(r.deadHeldBefore);
    } finally {
      await store.close();
      await cluster.close();
    }
  }, 600_000);
}
