import { createMemoryStore } from "@ipamkit/core";
import { describeStoreConformance } from "./index.js";

// The in-memory reference store passes the same suite as every other store — once with separate
// writes (like the file store), with separate writes and claims and pools scanned in bulk (like Kubernetes),
// and with atomic commits and claim batches (like etcd).
describeStoreConformance({ name: "memory", create: () => createMemoryStore() });
describeStoreConformance({
  name: "memory (claim and pool scans: like Kubernetes)",
  create: () => createMemoryStore({ claimScans: true, poolScans: true }),
  claimScans: true,
  poolScans: true,
});
describeStoreConformance({ name: "memory (atomic commit)", create: () => createMemoryStore({ atomicCommit: true }), atomicCommit: true });
describeStoreConformance({
  name: "memory (entry-level commits)",
  create: () => createMemoryStore({ atomicCommit: true, entryWrites: true }),
  atomicCommit: true,
  entryWrites: true,
});
describeStoreConformance({
  name: "memory (entry-level commits, claim batches: like etcd)",
  create: () => createMemoryStore({ atomicCommit: true, entryWrites: true, claimBatches: true }),
  atomicCommit: true,
  entryWrites: true,
});
