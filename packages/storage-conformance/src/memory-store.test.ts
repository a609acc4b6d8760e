import { createMemoryStore } from "@ipamkit/core";
import { describeStoreConformance } from "./index.js";

// The in-memory reference store passes the same suite as every other store — once with separate
// writes (like the file and Kubernetes stores) and once with atomic commits (like etcd).
describeStoreConformance({ name: "memory", create: () => createMemoryStore() });
describeStoreConformance({ name: "memory (atomic commit)", create: () => createMemoryStore({ atomicCommit: true }), atomicCommit: true });
describeStoreConformance({
  name: "memory (entry-level commits)",
  create: () => createMemoryStore({ atomicCommit: true, entryWrites: true }),
  atomicCommit: true,
  entryWrites: true,
});
