import type { AttachmentKey } from "./key.js";
import type { Pool } from "./pool.js";
import type { Reservation } from "./reservation.js";

/**
 * The storage contract. Every backend implements {@link StoreBackend} and passes
 * @ipamkit/storage-conformance. There is no lock: every write is compare-and-swap on an
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
  /**
   * A node's slice of a range (Whereabouts' node slices, `node_slice_size`): the pool of `cidr` (the
   * slice) that this node allocates in, apart from any other pool of the same CIDR. Absent for every
   * other pool. Only stores with `capabilities.nodePools` take such refs (DESIGN.md, "Node slices").
   */
  readonly node?: string;
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

/** One pool of a listing with contents: what `readPool` would give there, or the error it would throw. */
export type ScannedPool = { readonly ref: PoolRef; readonly stored: StoredPool } | { readonly ref: PoolRef; readonly error: Error };

/** One claim of a listing with contents: where it is, and what `readClaim` would give there. */
export interface ScannedClaim {
  readonly ref: ClaimRef;
  readonly stored: StoredClaim;
}

/** One conditional step of an atomic {@link StoreBackend.commit}. */
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

/**
 * What a store can do beyond the required calls: the one place a store advertises it. Core reads
 * these, never the presence of a method nor the name of a backend.
 */
export interface StoreCapabilities {
  /** Safe when several OS processes on one host use the store at once. */
  readonly crossProcess: boolean;
  /** Safe when several hosts share the store. */
  readonly distributed: boolean;
  /** Offers `commit`: several writes in one atomic transaction. */
  readonly transactions: boolean;
  /**
   * `commit` accepts the entry-level "reserve" and "unreserve" steps (implies `transactions`):
   * concurrent allocations in one pool then conflict only when they pick the same address or key.
   */
  readonly entryWrites: boolean;
  /** `readClaims` of several claims costs one request (core then reads claims ahead). */
  readonly batchReads: boolean;
  /**
   * `listPools` and `listClaims` with `contents` cost one paged list, not a read per record. A
   * store without it is never asked for contents: core lists and reads each record instead.
   */
  readonly bulkLists: boolean;
  /**
   * Keeps pools of one node's slice (`PoolRef.node`) apart from the range's pool of the same CIDR,
   * and lists them with their node. Without it, core's adapter refuses such refs (StoreRejectedError).
   */
  readonly nodePools: boolean;
}

export interface ClaimReadOptions {
  /**
   * Read the store itself, not what this process remembers (core's caches honour it; a store,
   * which remembers nothing, ignores it). For answers that write nothing, which no
   * compare-and-swap would correct.
   */
  readonly fresh?: boolean;
}

export interface ListOptions {
  /** Also read each record listed, in bulk (only asked of stores with `capabilities.bulkLists`). */
  readonly contents?: boolean;
}

/**
 * The storage contract: what a backend implements (9 calls). Core completes it into an
 * {@link IpamStore} (`completeStore`), filling in what the capabilities say the store lacks.
 */
export interface StoreBackend {
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
   * Every pool, in one stable order (network, then CIDR text). With `contents` (stores with
   * `bulkLists`): each with what `readPool` would give, read in bulk ({@link ScannedPool}; a pool
   * `readPool` would refuse is in its place with that error). For passes over every pool, never
   * for one ADD or DEL.
   */
  listPools(options?: ListOptions): Promise<PoolRef[] | ScannedPool[]>;
  /** Reads claims and their versions (undefined where absent), in the order asked; one is a batch of one. */
  readClaims(refs: readonly ClaimRef[], options?: ClaimReadOptions): Promise<(StoredClaim | undefined)[]>;
  /** Compare-and-swap like writePool; `expected` undefined means create-if-absent. */
  writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version>;
  /** Deletes the claim only if its version is still `expected`; otherwise StoreConflictError. */
  deleteClaim(ref: ClaimRef, expected: Version): Promise<void>;
  /**
   * Every claim of these networks, in one stable order (address text within each network, the
   * networks in the order asked). With `contents` (stores with `bulkLists`): each with what
   * `readClaims` would give, read in bulk; a claim not in the answer did not exist when it was
   * read. Its cost grows with every claim stored: for passes over many, never for one ADD or DEL.
   */
  listClaims(networks: readonly string[], options?: ListOptions): Promise<ClaimRef[] | ScannedClaim[]>;
  /**
   * Stores with `capabilities.transactions`: applies every step atomically — all compares hold
   * and all writes happen, or StoreConflictError and nothing changes. Returns the new version of
   * each step (the checked version for "check-pool", "" for "delete-claim").
   */
  commit?(writes: readonly StoreWrite[]): Promise<Version[]>;
  /** Releases connections and handles. */
  close(): Promise<void>;
}

/**
 * A store as core and its callers use it: a {@link StoreBackend} completed by `completeStore`,
 * so that no call site branches on a missing method. `commit` refuses (StoreRejectedError) on a
 * store without `capabilities.transactions`; listings with contents are filled in by reads.
 */
export interface IpamStore {
  readonly name: string;
  readonly capabilities: StoreCapabilities;
  readPool(ref: PoolRef): Promise<StoredPool | undefined>;
  writePool(ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version>;
  listPools(): Promise<PoolRef[]>;
  listPools(options: { readonly contents: true }): Promise<ScannedPool[]>;
  readClaims(refs: readonly ClaimRef[], options?: ClaimReadOptions): Promise<(StoredClaim | undefined)[]>;
  /** One claim: a batch of one. */
  readClaim(ref: ClaimRef, options?: ClaimReadOptions): Promise<StoredClaim | undefined>;
  writeClaim(ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version>;
  deleteClaim(ref: ClaimRef, expected: Version): Promise<void>;
  listClaims(network: string | readonly string[]): Promise<ClaimRef[]>;
  listClaims(networks: readonly string[], options: { readonly contents: true }): Promise<ScannedClaim[]>;
  commit(writes: readonly StoreWrite[]): Promise<Version[]>;
  close(): Promise<void>;
}

/** One printable id for a pool: `cidr` or `network/cidr`, then `@node` for a node's slice. */
export function poolId(ref: PoolRef): string {
  const id = ref.network === "" ? ref.cidr : `${ref.network}/${ref.cidr}`;
  return ref.node === undefined ? id : `${id}@${ref.node}`;
}

export function claimId(ref: ClaimRef): string {
  return ref.network === "" ? ref.address : `${ref.network}/${ref.address}`;
}

export function samePoolRef(a: PoolRef, b: PoolRef): boolean {
  return a.network === b.network && a.cidr === b.cidr && a.node === b.node;
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The stable order of pools: by network, then CIDR text, then node (a range's own pool first). */
export function comparePoolRefs(a: PoolRef, b: PoolRef): number {
  return compareText(a.network, b.network) || compareText(a.cidr, b.cidr) || compareText(a.node ?? "", b.node ?? "");
}
