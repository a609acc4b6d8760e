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
  atomicCommit: true,
  create: () => {
    const prefix = `/conformance/${process.pid}-${n++}/`;
    const store = createEtcdStore({ endpoints: [endpoint], prefix });
    prefixes.set(store, prefix);
    return store;
  },
  // Writes two reservations at one offset straight into the pool's key.
  corruptPool: async (store, ref) => {
    const client = new Etcd3({ hosts: endpoint });
    const row = (id: string) => ({ offset: "5", containerId: id, ifName: "eth0" });
    await client
      .put(layout(prefixes.get(store) as string).pool(ref))
      .value(JSON.stringify({ cidr: ref.cidr, network: ref.network, lastOffset: null, reservations: [row("a"), row("b")] }));
    client.close();
  },
});
