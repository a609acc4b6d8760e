import { attachmentKey, createIpam, type IpamStore, parseRange } from "@ipamkit/core";
import { describeStoreConformance } from "@ipamkit/storage-conformance";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawObjects } from "../test/raw.js";
import { type KubeEnv, kubeTargets } from "../test/targets.js";
import { createKubernetesStore } from "./index.js";
import { ipPoolName } from "./names.js";
import { IPPOOL } from "./objects.js";

for (const target of kubeTargets()) {
  describe(`storage-kubernetes on ${target.name}`, () => {
    let env: KubeEnv;
    const namespaces = new WeakMap<IpamStore, string>();
    beforeAll(async () => {
      env = await target.start();
    });
    afterAll(async () => {
      await env?.close();
    });

    describeStoreConformance({
      name: "storage-kubernetes",
      capabilities: { bulkLists: true, nodePools: true },
      ...(target.concurrency === undefined ? {} : { concurrency: target.concurrency }),
      create: async () => {
        const namespace = await env.namespace();
        // The contract holds every offset exactly; Whereabouts-readability (≥ 2^63 refused) is tested apart.
        const store = createKubernetesStore({ kubeconfig: env.kubeConfig, namespace, whereaboutsCompatible: false });
        namespaces.set(store, namespace);
        return store;
      },
      // An entry whose key is no offset: Whereabouts would drop it silently; the store must report it.
      corruptPool: async (store, ref) => {
        const raw = rawObjects(env.kubeConfig, namespaces.get(store) as string);
        const name = ipPoolName(ref);
        const object = await raw.get(IPPOOL, name);
        (object.spec as { allocations: Record<string, unknown> }).allocations["not-an-offset"] = { id: "ghost", podref: "a/b" };
        await raw.replace(IPPOOL, object);
      },
      extra: (store) => {
        it("32 concurrent allocators on one pool meet real 409 conflicts and lose nothing", async () => {
          const s = store();
          const range = parseRange({ range: "10.70.0.0/24" });
          const counter = { conflicts: 0 };
          const ipam = createIpam({ store: s, retry: { counter, attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 50 } });
          const key = (i: number) => attachmentKey({ containerId: `c${i}`, ifName: "net1" });
          const got = await Promise.all(Array.from({ length: 32 }, (_, i) => ipam.allocate({ ranges: [range], key: key(i) })));
          const addresses = got.map(([a]) => a?.address.value);
          expect(new Set(addresses).size).toBe(32);
          expect(counter.conflicts).toBeGreaterThan(0);
          const pool = (await s.readPool({ network: "", cidr: range.cidr.text }))?.pool;
          expect(pool?.size).toBe(32);
        });
      },
    });
  });
}
