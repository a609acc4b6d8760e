import { createMemoryStore, type MemoryStoreOptions } from "@ipamkit/core";
import { describeStoreConformance } from "./index.js";

// The in-memory reference store passes the same suite as every other store, once for each set of
// capabilities core has a path for: none (separate writes), bulk lists, atomic commits,
// entry-level commits, and entry-level commits with batched claim reads; node-slice pools with
// separate writes (as the Kubernetes store) and with entry-level commits.
const variants: [string, MemoryStoreOptions][] = [
  ["memory", {}],
  ["memory (bulk lists, node-slice pools)", { bulkLists: true, nodePools: true }],
  ["memory (atomic commit)", { transactions: true }],
  ["memory (entry-level commits)", { transactions: true, entryWrites: true }],
  [
    "memory (entry-level commits, batched reads, bulk lists, node-slice pools)",
    { transactions: true, entryWrites: true, batchReads: true, bulkLists: true, nodePools: true },
  ],
];
for (const [name, capabilities] of variants)
  describeStoreConformance({ name, create: () => createMemoryStore(capabilities), capabilities });
