import { describeStoreConformance } from "@ipamkit/storage-conformance";
import { Etcd3 } from "etcd3";
import { inject } from "vitest";
import { createEtcdStore } from "./index.js";
import { layout } from "./layout.js";

const endpoint = inject("etcdEndpoint");
let n = 0;
const prefixes = new WeakMap<object, string>();

describeStoreConformance({
  name: "storage-etcd",
  capabilities: { transactions: true, entryWrites: true, batchReads: true, bulkLists: true },
  // one key/<containerId/ifName> row per key: a container holds at most one entry without ifname
  legacyEntries: "one",
  create: () => {
    const prefix = `/conformance/${process.pid}-${n++}/`;
    const store = createEtcdStore({ endpoints: [endpoint], prefix });
    prefixes.set(store, prefix);
    return store;
  },
  // Writes an inconsistent index entry straight into the pool's keys.
  corruptPool: async (store, ref) => {
    const client = new Etcd3({ hosts: endpoint });
    // an index entry that points at an address holding no reservation of that key
    await client.put(layout(prefixes.get(store) as string).key(ref, "ghost/eth0")).value("7");
    client.close();
  },
});
