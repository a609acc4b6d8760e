import type { AttachmentKey } from "./key.js";
import type { Pool } from "./pool.js";
import type { Reservation } from "./reservation.js";

/**
 * The storage contract. Every backend (memory, file, etcd, Kubernetes) implements exactly this and
 * passes @ipamkit/storage-conformance. There is no lock: every write is compare-and-swap on an
 * opaque version, and a stale write changes nothing and throws StoreConflictError.
 */

/**
 * An opaque version. It changes on every successful write, even one that stores identical content,
 * and is never given again to the same record, even after it is deleted and created anew (a
 * compare at a version remembered from a deleted record must fail).
 */
export type Version = string;

/** Identifies a pool: one CIDR within one network (`network_name`; "" is the unnamed network). */
export interface PoolRef {
  readonly network: string;
  /** Canonical CIDR text (network address form). */
  readonly cidr: string;
}

export interface StoredPool {
  readonly pool: Pool;
  readonly version: Version;
}

/**
 * Identifies an overlapping-range uniqueness record: one address within one network. Two pools
 * of a network whose CIDRs overlap never hand out the same address, because each holder first
 * claims the address here. See DESIGN.md for why pool and claim cannot drift into a double hold.
 */
export interface ClaimRef {
  readonly network: string;
  /** Canonical address text. */
  readonly address: string;
}

/** Who holds a claimed address: the pool and the attachment key. */
export interface Claim {
  readonly pool: PoolRef;
  readonly key: AttachmentKey;
  readonly podRef?: string;
}

export interface StoredClaim {
  readonly claim: Claim;
  readonly version: Version;
}

/** One pool of a {@link IpamStore.scanPools}: what `readPool` would give there, or the error it would throw. */
export type ScannedPool = { readonly ref: PoolRef; readonly stored: StoredPool } | { readonly ref: PoolRef; readonly error: Error };

/** One claim of a {@link IpamStore.scanClaims}: where it is, and what `readClaim` would give there. */
export interface ScannedClaim {
  readonly ref: ClaimRef;
  readonly stored: StoredClaim;
}

/** One conditional step of an atomic {@link IpamStore.commit}. */
export type StoreWrite =
  | { readonly kind: "pool"; readonly ref: PoolRef; readonly pool: Pool; readonly expected: Version | undefined }
  | { readonly kind: "claim"; readonly ref: ClaimRef; readonly claim: Claim; readonly expected: Version | undefined }
  | { readonly kind: "delete-claim"; readonly ref: ClaimRef; readonly expected: Version }
  /** Writes nothing: only requires the pool to still be at `expected` (undefined: still absent). */
  | { readonly kind: "check-pool"; readonly ref: PoolRef; readonly expected: Version | undefined }
  /**
   * Entry-level (stores with `capabilities.entryWrites`): adds one reservation, creating the pool
   * if absent; conflicts if the pool already holds its offset or its key. Sets the round-robin
   * cursor to `lastOffset`. Unlike "pool", it does not conflict with changes to other entries.
   */
  | { readonly kind: "reserve"; readonly ref: PoolRef; readonly reservation: Reservation; readonly lastOffset: bigint | undefined }
  /** Entry-level: removes exactly this reservation; conflicts unless the pool still holds it unchanged. */
  | { readonly kind: "unreserve"; readonly ref: PoolRef; readonly reservation: Reservation };

export interface StoreCapabilities {
  /** Safe when several OS processes on one host use the store at once. */
  readonly crossProcess: boolean;
  /** Safe when several hosts share the store. */
  readonly distributed: boolean;
  /**
   * `commit` accepts the entry-level "reserve" and "unreserve" steps: concurrent allocations in one
   * pool then conflict only when they pick the same address or key (etcd's per-address keys).
   */
  readonly entryWrites?: boolean;
}

export interface ClaimReadOptions {
  /**
   * Read the store itself, not what this process remembers (core's wrappers honour it; a store,
   * which remembers nothing, ignores it). For answers that write nothing, which no
   * compare-and-swap would correct.
   */
  readonly fresh?: boolean;
}

export interface IpamStore {
  /** Short backend name used in error prefixes, e.g. "storage-file". */
  readonly name: string;
  readonly capabilities: StoreCapabilities;
  /** Reads a pool and its version; undefined when it does not exist. */
  readPool(ref: PoolRef): Promise<StoredPool | undefined>;
  /**
   * Writes `pool` only if the stored version is still `expected` (undefined: only if the pool does
   * not exist yet). Returns the new version. A stale write throws StoreConflictError and writes nothing.
   */
  writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version>;
  /**
   * Optional, no request: the pool as this process last read or wrote it (core's withPoolRecall),
   * possibly stale. Only for choices that a compare-and-swap write at its version validates.
   */
  recallPool?(ref: PoolRef): StoredPool | undefined;
  /** Every pool, in one stable order (network, then CIDR text). */
  listPools(): Promise<PoolRef[]>;
  /**
   * Optional: every pool with what `readPool` would give, read in bulk (one paged list or range
   * read, where `listPools` and a `readPool` each cost a request per pool), in `listPools`' order.
   * A pool `readPool` would refuse (corrupt) is in its place with that error; the rest are read.
   * For passes over every pool (the reconciler's observation), never for one ADD or DEL.
   */
  scanPools?(): Promise<ScannedPool[]>;
  /** Reads a claim and its version; undefined when it does not exist. */
  readClaim(ref: ClaimRef, options?: ClaimReadOptions): Promise<StoredClaim | undefined>;
  /**
   * Optional: reads several claims in one request (etcd: one transaction), each answer what
   * `readClaim` would give, in the order asked. Core reads through `readClaimsOf`, which falls back
   * to `readClaim` for each.
   */
  readClaims?(refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]>;
  /** Compare-and-swap like writePool; `expected` undefined means create-if-absent. */
  writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version>;
  /** Deletes the claim only if its version is still `expected`; otherwise StoreConflictError. */
  deleteClaim(ref: ClaimRef, expected: Version): Promise<void>;
  /** Every claim of a network, in one stable order (address text). */
  listClaims(network: string): Promise<ClaimRef[]>;
  /**
   * Optional: every claim of these networks, each with what `readClaim` would give, read in bulk
   * (Kubernetes: one paged list, where `readClaim` is a request each). A claim of these networks
   * that is not in the answer did not exist when it was read. For passes over many claims at once
   * (the reconciler releasing thousands), never for one ADD or DEL: its cost grows with every claim
   * stored. In `listClaims`' order within each network, the networks in the order asked.
   */
  scanClaims?(networks: readonly string[]): Promise<ScannedClaim[]>;
  /**
   * Optional: applies every step atomically — all compares hold and all writes happen, or
   * StoreConflictError and nothing changes. Returns the new version of each step (the checked
   * version for "check-pool", "" for "delete-claim"). Stores with multi-key transactions (etcd)
   * offer it; core then writes a claim in the same transaction as its pool.
   */
  commit?(writes: readonly StoreWrite[]): Promise<Version[]>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}

/** One printable id for a pool: `cidr` or `network/cidr`. */
export function poolId(ref: PoolRef): string {
  return ref.network === "" ? ref.cidr : `${ref.network}/${ref.cidr}`;
}

export function claimId(ref: ClaimRef): string {
  return ref.network === "" ? ref.address : `${ref.network}/${ref.address}`;
}

export function samePoolRef(a: PoolRef, b: PoolRef): boolean {
  return a.network === b.network && a.cidr === b.cidr;
}

/** The stable order of pools: by network, then CIDR text. */
export function comparePoolRefs(a: PoolRef, b: PoolRef): number {
  return a.network < b.network ? -1 : a.network > b.network ? 1 : a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0;
}
