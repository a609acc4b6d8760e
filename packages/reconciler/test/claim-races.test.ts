import { attachmentKey, createIpam, formatIp, type IpamStore, parseRange } from "@ipamkit/core";
import { createKubernetesStore } from "@ipamkit/storage-kubernetes";
import { afterEach, describe, expect, it } from "vitest";
import { type Cluster, clusterTargets, freshClusterEach, POOL_NS } from "./cluster.js";

/**
 * Issue 34: 20 concurrent ipamkit ADDs on a fresh range, then 20 DELs, left 14–19
 * OverlappingRangeIPReservations behind, and after the ADDs most named another container than
 * the IPPool entry of their address (an ADD that took a fresh record over, then lost the pool
 * write, kept it). Each ADD and DEL here is its own store client, as separate CNI processes are,
 * on two overlapping ranges with overlapping-range protection on (the default).
 */

const ORIPS = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: POOL_NS, plural: "overlappingrangeipreservations" };
const wide = parseRange({ range: "10.66.0.0/24" });
const narrow = parseRange({ range: "10.66.0.0/25" });
const CALLS = 20;
const ROUNDS = 3;
const retry = { attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 50 };

let cluster: Cluster;

interface Orip {
  metadata: { name: string };
  spec: { podref?: string; containerid?: string; ifname?: string };
}

async function orips(): Promise<Orip[]> {
  return ((await cluster.custom.listNamespacedCustomObject(ORIPS)) as { items: Orip[] }).items;
}

for (const target of clusterTargets()) {
  describe(`concurrent ADDs and DELs leave every ORIP naming its entry, and none after the DELs, on ${target.name}`, () => {
    const clients: IpamStore[] = [];
    freshClusterEach(target, (c) => {
      cluster = c;
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });

    /** One CNI call: a store client of its own. */
    const call = () => {
      const store = createKubernetesStore({ kubeconfig: cluster.kubeConfig });
      clients.push(store);
      return createIpam({ store, retry });
    };

    it(`${CALLS} concurrent ADDs, then ${CALLS} concurrent DELs, ${ROUNDS} rounds`, async () => {
      const rangeOf = (i: number) => (i % 2 === 0 ? wide : narrow);
      const key = (round: number, i: number) => attachmentKey({ containerId: `c${round}-${i}`, ifName: "net1" });
      for (let round = 0; round < ROUNDS; round++) {
        const added = await Promise.all(
          Array.from({ length: CALLS }, (_, i) =>
            call().allocate({ ranges: [rangeOf(i)], key: key(round, i), podRef: `ns/pod-${round}-${i}` }),
          ),
        );
        const addresses = added.map(([a]) => (a === undefined ? "" : formatIp(a.address)));
        expect(new Set(addresses).size).toBe(CALLS);
        // every ORIP names exactly the container and interface of the entry holding its address
        const byAddress = new Map(added.map(([a], i) => [addresses[i], a?.reservation.key]));
        const found = await orips();
        expect(found.map((o) => o.metadata.name).sort()).toEqual([...addresses].sort());
        for (const o of found) {
          const entry = byAddress.get(o.metadata.name);
          expect({ address: o.metadata.name, containerid: o.spec.containerid, ifname: o.spec.ifname }).toEqual({
            address: o.metadata.name,
            containerid: entry?.containerId,
            ifname: entry?.ifName,
          });
        }
        await Promise.all(Array.from({ length: CALLS }, (_, i) => call().release({ ranges: [rangeOf(i)], key: key(round, i) })));
        expect((await orips()).map((o) => o.metadata.name)).toEqual([]);
        for (const range of [wide, narrow]) {
          const pool = await cluster.store.readPool({ network: "", cidr: range.cidr.text });
          expect(pool?.pool.size ?? 0).toBe(0);
        }
      }
    }, 300_000);
  });
}
