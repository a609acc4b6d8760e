import type { IpamStore, PoolRef, StoreCapabilities } from "@ipamkit/core";

export interface ConformanceOptions {
  /** Shown in the describe title. */
  name: string;
  /** A fresh, empty store for each test. */
  create: () => Promise<IpamStore> | IpamStore;
  /** Called after each test, after the store was closed. */
  cleanup?: () => Promise<void> | void;
  /**
   * Writes an undecodable or invariant-breaking pool straight into the backend (e.g. two
   * reservations at one offset). Stores whose representation cannot hold such a state (the memory
   * store keeps validated Pool values) leave it out, and the suite checks that such a state cannot
   * be built instead.
   */
  corruptPool?: (store: IpamStore, ref: PoolRef) => Promise<void>;
  /**
   * The capabilities the store advertises beyond the required calls (each absent one: false). The
   * suite checks the store advertises exactly these, and runs the cases of each: `transactions`
   * (atomic commit), `entryWrites` (reserve/unreserve steps), `nodePools` (node-slice pools; a
   * store without them is checked to refuse them). Listings with contents run on every store: read
   * in bulk where `bulkLists`, filled in by core's adapter elsewhere.
   */
  capabilities?: Partial<Pick<StoreCapabilities, "transactions" | "entryWrites" | "batchReads" | "bulkLists" | "nodePools">>;
  /**
   * How many legacy entries (no ifName, Whereabouts < 0.8) one container id may hold in one pool:
   * "several" (default; Whereabouts' IPPool, files, memory) or "one" (a store that indexes entries
   * by exact key, such as etcd's `key/<containerId/ifName>` rows). The legacy cases run accordingly.
   */
  legacyEntries?: "several" | "one";
  /** Backend-specific cases, registered after the common ones inside the same describe. */
  extra?: (getStore: () => IpamStore) => void;
  /** Concurrent allocators and allocations each in the concurrency case. Default 32 × 20. */
  concurrency?: { allocators: number; each: number };
}
