import { StoreConflictError } from "./errors.js";
import { formatIp, ipAt, parseCidr, parseIp } from "./ip.js";
import { Pool } from "./pool.js";
import { protocolBreaks } from "./protocol-breaks.js";
import {
  type Claim,
  type ClaimRef,
  type IpamStore,
  type PoolRef,
  poolId,
  type ScannedClaim,
  type StoredClaim,
  type StoredPool,
  type StoreWrite,
  samePoolRef,
  type Version,
} from "./store.js";

/**
 * The overlapping-range claim protocol (see DESIGN.md, "Claims"). A claim names the pool that
 * holds an address. A claim is live while its named pool holds that address (by any key); a claim
 * whose pool does not hold it is dangling (a crash between two writes) and may be taken over —
 * but only after fencing: bumping the named pool's version, so that a holder still between its
 * claim write and its pool write (which uses the pool version it read *before* claiming) fails.
 */
export type ClaimOutcome = { kind: "claimed"; version: Version; created: boolean } | { kind: "taken"; by: Claim };

function holdsAddress(pool: Pool, address: string): boolean {
  const ip = parseIp(address);
  const offset = ip.value - pool.cidr.network;
  return offset >= 0n && offset < pool.cidr.size && pool.atOffset(offset) !== undefined;
}

/**
 * What claiming an address runs into: no claim; a claim of ours or of our own pool (dangling as of
 * the caller's read of that pool); another pool's claim whose pool holds the address (taken); or
 * another pool's claim whose pool does not (dangling: to be fenced before it is replaced).
 */
type Inspection =
  | { kind: "free" }
  | { kind: "taken"; by: Claim }
  | { kind: "dangling"; version: Version; other?: { ref: PoolRef; stored: StoredPool | undefined } };

async function inspectClaim(store: IpamStore, ref: ClaimRef, claim: Claim): Promise<Inspection> {
  const existing = await store.readClaim(ref);
  if (existing === undefined) return { kind: "free" };
  if (samePoolRef(existing.claim.pool, claim.pool)) return { kind: "dangling", version: existing.version };
  const stored = await store.readPool(existing.claim.pool);
  if (stored !== undefined && holdsAddress(stored.pool, ref.address)) return { kind: "taken", by: existing.claim };
  return { kind: "dangling", version: existing.version, other: { ref: existing.claim.pool, stored } };
}

export async function claimAddress(store: IpamStore, ref: ClaimRef, claim: Claim): Promise<ClaimOutcome> {
  // Most addresses have no claim: create-if-absent first — the very write the "free" case makes,
  // without the read before it. An existing claim fails it, and is then inspected as below.
  try {
    return { kind: "claimed", version: await store.writeClaim(ref, claim, undefined), created: true };
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error;
  }
  const found = await inspectClaim(store, ref, claim);
  if (found.kind === "taken") return found;
  if (found.kind === "free") return { kind: "claimed", version: await store.writeClaim(ref, claim, undefined), created: true };
  if (found.other !== undefined && !protocolBreaks.noFence) {
    // Fence: any holder that read that pool before we looked now fails its write. A pool that does
    // not exist yet is fenced by creating it empty, so a holder's create-if-absent fails.
    const { ref: other, stored } = found.other;
    if (stored !== undefined) await store.writePool(other, stored.pool, stored.version);
    else await store.writePool(other, Pool.empty(parseCidr(other.cidr), { name: poolId(other) }), undefined);
  }
  // Same pool (our key or another): the caller read our pool and found the address free, so the
  // claim is dangling as of that read, and the caller's own pool write (at the version read before
  // this step) is the fence. Every claimant compare-and-swaps the claim — even one that already
  // names it — so two claimants of one address are always ordered by the claim's version.
  return { kind: "claimed", version: await store.writeClaim(ref, claim, found.version), created: false };
}

/** Several claims, read together (one request on stores with `capabilities.batchReads`; none for no claims). */
export async function readClaimsOf(store: IpamStore, refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
  const [only] = refs;
  if (refs.length === 1 && only !== undefined) return [await store.readClaim(only)];
  return refs.length === 0 ? [] : store.readClaims(refs);
}

/**
 * Every claim of these networks, for passes over many (a reconciler's audit, the CLI): one bulk
 * read on stores with `capabilities.bulkLists`, else each network listed and its claims read.
 */
export async function scanClaimsOf(store: IpamStore, networks: readonly string[]): Promise<ScannedClaim[]> {
  return networks.length === 0 ? [] : store.listClaims(networks, { contents: true });
}

/** What a store wrapper remembers of one claim: the answer (undefined: not claimed), or nothing known. */
export type RecalledClaim = { stored: StoredClaim | undefined } | undefined;

/**
 * Several claims through a wrapper's memory: each claim `recall` answers costs no request, the
 * others are read together from `store` (readClaimsOf) and handed to `learn`. In the order asked.
 */
export async function readClaimsThrough(
  store: IpamStore,
  refs: readonly ClaimRef[],
  memory: { recall(ref: ClaimRef): RecalledClaim; learn?(ref: ClaimRef, read: StoredClaim | undefined): void },
): Promise<(StoredClaim | undefined)[]> {
  const recalled = refs.map((ref) => memory.recall(ref));
  const read = await readClaimsOf(
    store,
    refs.filter((_, i) => recalled[i] === undefined),
  );
  let next = 0;
  return refs.map((ref, i) => {
    const known = recalled[i];
    if (known !== undefined) return known.stored;
    const answer = read[next++];
    memory.learn?.(ref, answer);
    return answer;
  });
}

/**
 * Each claim's version when it names this pool (undefined otherwise), the claims read together
 * (`readClaimsOf`); read by a release *before* it writes the pool, so that the later delete fails
 * if anybody (even an ADD of the same key) claimed the address again in between. A claim naming
 * this pool for another key than the one released is deleted too: the pool holds the address for
 * the released key as read, so that claim is an allocation's that lost its race (its pool write
 * was made at a version without our entry, and fails) or one left by a crash — a leak either way.
 */
export async function ownClaimVersions(
  store: IpamStore,
  claims: readonly { ref: ClaimRef }[],
  pool: PoolRef,
): Promise<(Version | undefined)[]> {
  const read = await readClaimsOf(
    store,
    claims.map((c) => c.ref),
  );
  return read.map((existing) => (existing === undefined || !samePoolRef(existing.claim.pool, pool) ? undefined : existing.version));
}

/** Deletes the claim only if unchanged since `version` was read (true); a changed claim belongs to somebody else now (false). */
export async function dropClaim(store: IpamStore, ref: ClaimRef, version: Version): Promise<boolean> {
  try {
    await store.deleteClaim(ref, version);
    return true;
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error;
    return false;
  }
}

/** The claim reference for an offset of a pool. */
export function claimRefFor(pool: PoolRef, offset: bigint): ClaimRef {
  return { network: pool.network, address: formatIp(ipAt(parseCidr(pool.cidr), offset)) };
}

/**
 * The atomic variant, for stores with `commit`: the claim is written in the same transaction as
 * the pool, so a claim never dangles. Returns the claim steps to add to that transaction, or
 * "taken". A claim naming another pool that does not hold the address (written by a non-atomic
 * writer) is replaced under a compare-only check that the other pool is still as observed — the
 * transactional equivalent of the fence.
 */
export async function planClaim(
  store: IpamStore,
  ref: ClaimRef,
  claim: Claim,
): Promise<{ kind: "taken"; by: Claim } | { kind: "plan"; writes: StoreWrite[] }> {
  const found = await inspectClaim(store, ref, claim);
  if (found.kind === "taken") return found;
  if (found.kind === "free") return { kind: "plan", writes: [{ kind: "claim", ref, claim, expected: undefined }] };
  const writes: StoreWrite[] = [{ kind: "claim", ref, claim, expected: found.version }];
  if (found.other !== undefined) writes.push({ kind: "check-pool", ref: found.other.ref, expected: found.other.stored?.version });
  return { kind: "plan", writes };
}
