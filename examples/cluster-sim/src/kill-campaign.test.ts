import { expect, it } from "vitest";
import { openSimStore, type StoreKind, startCluster } from "./cluster.js";
import { runKillCampaign } from "./kill-campaign.js";

// The SIGKILL campaign of RELIABILITY.md: bounded here (CI); RELIABILITY=full aims at 100 kills per store.
const KILLS = process.env.RELIABILITY === "full" ? 110 : 12;

for (const kind of ["file", "etcd", "kubernetes"] as StoreKind[]) {
  it(`${kind}: CNI processes SIGKILLed mid-ADD and mid-DEL leave a clean store; dead attachments are freed`, async () => {
    const cluster = await startCluster(kind, 1);
    const store = await openSimStore(cluster);
    try {
      const r = await runKillCampaign(cluster, { kills: KILLS, store });
      console.info(`[reliability] kill campaign ${kind}: ${JSON.stringify(r)}`);
      expect(r.killed).toBeGreaterThanOrEqual(Math.floor(KILLS / 2));
      expect(r.killedAdds).toBeGreaterThan(0);
      // at full size the kills must also land after the store was touched, not all during start-up
      if (KILLS >= 100) {
        expect(r.addKills.partial + r.addKills.written, "ADDs killed after writing").toBeGreaterThan(0);
        expect(r.delKills.partial + r.delKills.released, "DELs killed after releasing").toBeGreaterThan(0);
      }
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
