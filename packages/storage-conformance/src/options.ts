import type { IpamStore, PoolRef } from "@ipamkit/core";

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
  /** The store offers the optional atomic `commit` (multi-object transactions); its semantics are then checked. */
  atomicCommit?: boolean;
  /** The store's `commit` accepts the entry-level "reserve"/"unreserve" steps; their semantics are then checked. */
  entryWrites?: boolean;
  /** The store offers the optional `scanClaims` (every claim of some networks in bulk); its answers are then checked against `readClaim`. */
  claimScans?: boolean;
  /** The store offers the optional `scanPools` (every pool in bulk); its answers are then checked against `readPool`. */
  poolScans?: boolean;
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
