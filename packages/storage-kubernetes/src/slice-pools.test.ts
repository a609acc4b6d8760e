import { attachmentKey, createIpam, parseRange, type Range, sliceRange } from "@ipamkit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawObjects } from "../test/raw.js";
import { type KubeEnv, kubeTargets } from "../test/targets.js";
import { createObjectApi } from "./api.js";
import { createKubernetesStore } from "./kubernetes-store.js";
import { whereaboutsLease } from "./lease.js";
import { readNodeSlice } from "./node-slice-read.js";
import { ANNOTATION, API_VERSION, IPPOOL, type Kind, type KubeObject, NODE_SLICE_POOL, RESERVATION } from "./objects.js";

const LEASE: Kind = { kind: "Lease", plural: "leases", group: "coordination.k8s.io", version: "v1" };

// Whereabouts' node slices on the Kubernetes store: the objects as Whereabouts' binary and its
// node-slice controller write them (names byte for byte, no ipamkit annotations), read by ipamkit.

const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const range = parseRange({ range: "10.9.0.0/22" });
const slice = (text: string) => sliceRange(range, text) as Range;

/** An IPPool as Whereabouts' binary writes it for a node's slice (offsets from the slice's network). */
const whereaboutsPool = (name: string, sliceText: string, allocations: Record<string, object>): KubeObject => ({
  apiVersion: API_VERSION,
  kind: "IPPool",
  metadata: { name },
  spec: { range: sliceText, allocations },
});

for (const target of kubeTargets()) {
  describe(`node-slice pools on ${target.name}`, () => {
    let env: KubeEnv;
    beforeAll(async () => {
      env = await target.start();
    }, 120_000);
    afterAll(async () => {
      await env?.close();
    });

    async function cluster() {
      const namespace = await env.namespace();
      const raw = rawObjects(env.kubeConfig, namespace);
      await raw.create(NODE_SLICE_POOL, {
        apiVersion: API_VERSION,
        kind: "NodeSlicePool",
        metadata: { name: "wbnet" },
        spec: { range: "10.9.0.0/22", sliceSize: "/24" },
        status: {
          allocations: [
            { nodeName: "node-a", sliceRange: "10.9.0.0/24" },
            { nodeName: "node-b", sliceRange: "10.9.1.0/24" },
            { nodeName: "", sliceRange: "10.9.2.0/24" },
            { nodeName: "", sliceRange: "10.9.3.0/24" },
          ],
        },
      });
      const store = createKubernetesStore({ kubeconfig: env.kubeConfig, namespace });
      return { namespace, raw, store };
    }

    it("lists Whereabouts' slice pools with their node and network, apart from a network named like one", async () => {
      const { raw, store } = await cluster();
      await raw.create(
        IPPOOL,
        whereaboutsPool("wbnet-node-a-10.9.0.0-24", "10.9.0.0/24", { "1": { id: "wa", podref: "default/wa", ifname: "net1" } }),
      );
      // a former node's pool: its slice is free now, its address still held
      await raw.create(
        IPPOOL,
        whereaboutsPool("wbnet-gone-10.9.2.0-24", "10.9.2.0/24", { "5": { id: "wg", podref: "default/wg", ifname: "net1" } }),
      );
      await raw.create(IPPOOL, whereaboutsPool("wbnet-10.9.0.0-22", "10.9.0.0/22", {}));
      await raw.create(IPPOOL, whereaboutsPool("other-net-10.7.0.0-24", "10.7.0.0/24", {}));
      expect(await store.listPools()).toEqual([
        { network: "other-net", cidr: "10.7.0.0/24" },
        { network: "wbnet", cidr: "10.9.0.0/22" },
        { network: "wbnet", cidr: "10.9.0.0/24", node: "node-a" },
        { network: "wbnet", cidr: "10.9.2.0/24", node: "gone" },
      ]);
      const a = await store.readPool({ network: "wbnet", cidr: "10.9.0.0/24", node: "node-a" });
      expect(a?.pool.reservations().map((r) => [r.offset, r.key.containerId])).toEqual([[1n, "wa"]]);
      await store.close();
    });

    it("allocates beside Whereabouts' entries in the node's pool, keeps the network's ORIPs, and annotates whose pool it is", async () => {
      const { raw, store } = await cluster();
      await raw.create(
        IPPOOL,
        whereaboutsPool("wbnet-node-b-10.9.1.0-24", "10.9.1.0/24", { "1": { id: "wb", podref: "default/wb", ifname: "net1" } }),
      );
      // Whereabouts' ORIP of its address: no annotations, the network's name
      await raw.create(RESERVATION, {
        apiVersion: API_VERSION,
        kind: "OverlappingRangeIPReservation",
        metadata: { name: "wbnet-10.9.1.1" },
        spec: { podref: "default/wb", ifname: "net1" },
      });
      const held = await store.readClaim({ network: "wbnet", address: "10.9.1.1" });
      expect(held?.claim.pool).toEqual({ network: "wbnet", cidr: "10.9.1.0/24", node: "node-b" });
      expect(held?.claim.key.containerId).toBe("wb");
      const ipam = createIpam({ store });
      const [got] = await ipam.allocate({
        network: "wbnet",
        node: "node-b",
        ranges: [slice("10.9.1.0/24")],
        key: key("ik"),
        podRef: "default/ik",
      });
      expect(got?.address && got.address.value - range.cidr.network).toBe(256n + 2n);
      const pool = await raw.pool("wbnet-node-b-10.9.1.0-24");
      expect(Object.keys((pool.spec as { allocations: object }).allocations)).toEqual(["1", "2"]);
      expect([pool.metadata?.annotations?.[ANNOTATION.network], pool.metadata?.annotations?.[ANNOTATION.node]]).toEqual([
        "wbnet",
        "node-b",
      ]);
      const orip = await raw.get(RESERVATION, "wbnet-10.9.1.2");
      expect(orip.metadata?.annotations?.[ANNOTATION.poolNode]).toBe("node-b");
      expect((await store.readClaim({ network: "wbnet", address: "10.9.1.2" }))?.claim.pool).toEqual({
        network: "wbnet",
        cidr: "10.9.1.0/24",
        node: "node-b",
      });
      // a network named like the node's pool collides with it by name: refused, never merged
      await expect(store.readPool({ network: "wbnet-node-b", cidr: "10.9.1.0/24" })).rejects.toMatchObject({ code: "STORE_CORRUPT" });
      const [freed] = await ipam.release({ network: "wbnet", node: "node-b", ranges: [slice("10.9.1.0/24")], key: key("ik") });
      expect(freed?.reservation.key.containerId).toBe("ik");
      expect((await raw.list(RESERVATION)).map((o) => o.metadata?.name)).toEqual(["wbnet-10.9.1.1"]);
      await store.close();
    });

    it("reads a node's slice as Whereabouts' plugin does (readNodeSlice)", async () => {
      const { namespace } = await cluster();
      const ask = (name: string, node: string) => readNodeSlice({ kubeconfig: env.kubeConfig, namespace, name, node });
      expect(await ask("wbnet", "node-b")).toEqual({ pool: `${namespace}/wbnet`, exists: true, slice: "10.9.1.0/24" });
      expect(await ask("wbnet", "node-z")).toEqual({ pool: `${namespace}/wbnet`, exists: true });
      expect(await ask("nonet", "node-b")).toEqual({ pool: `${namespace}/nonet`, exists: false });
    });
  });
}

describe("the per-node-pool Lease (node-slice mode)", () => {
  it("is named after the node's slice pool, as Whereabouts names it", async () => {
    const target = kubeTargets()[0];
    if (target === undefined) throw new Error("no Kubernetes target");
    const env = await target.start();
    const namespace = await env.namespace();
    const api = createObjectApi({ kubeConfig: env.kubeConfig, namespace, requestTimeoutMs: 10_000, pageSize: 10 });
    try {
      const pool = { network: "wbnet", cidr: "10.9.1.0/24", node: "node-b" };
      const lease = whereaboutsLease({ kubeconfig: env.kubeConfig, namespace, identity: "ipamkit/t", pool });
      const during = await lease(async () =>
        (await api.list(LEASE)).map((l) => [l.metadata?.name, (l.spec as { holderIdentity?: string }).holderIdentity]),
      );
      expect(during).toEqual([["wbnet-node-b-10.9.1.0-24", "ipamkit/t"]]);
    } finally {
      api.close();
      await env.close();
    }
  });
});
