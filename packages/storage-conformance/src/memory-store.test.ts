import { createMemoryStore, type MemoryStoreOptions } from "@ipamkit/core";
import { describeStoreConformance } from "./index.js";

// The in-memory reference store passes the same suite as every other store, once for each set of
// capabilities core has a path for: none (separate writes), bulk lists, atomic commits,
// entry-level commits, and entry-level commits with batched claim reads.
const variants: [string, MemoryStoreOptions][] = [
  ["memory", {}],
  ["memory (bulk lists)", { bulkLists: true }],
  ["memory (atomic commit)", { transactions: true }],
  ["memory (entry-level commits)", { transactions: true, entryWrites: true }],
  ["memory (entry-level commits, batched reads, bulk lists)", { transactions: true, entryWrites: true, batchReads: true, bulkLists: true }],
];
for (const [name, capabilities] of variants)
  describeStoreConformance({ name, create: () => createMemoryStore(capabilities), capabilities });
