import { StoreConflictError } from "./errors.js";
import { formatIp, ipAt, parseCidr, parseIp } from "./ip.js";
import { type AttachmentKey, sameKey } from "./key.js";
import type { Pool } from "./pool.js";
import { type Claim, type ClaimRef, type IpamStore, type PoolRef, samePoolRef, type Version } from "./store.js";

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

export async function claimAddress(store: IpamStore, ref: ClaimRef, claim: Claim): Promise<ClaimOutcome> {
  const existing = await store.readClaim(ref);
  if (existing === undefined) {
    return { kind: "claimed", version: await store.writeClaim(ref, claim, undefined), created: true };
  }
  const holder = existing.claim;
  if (samePoolRef(holder.pool, claim.pool)) {
    if (sameKey(holder.key, claim.key)) return { kind: "claimed", version: existing.version, created: false };
    // Same pool, other key: the caller read our pool and found the address free, so the claim is
    // dangling as of that read; the caller's own pool write (at the version read before this
    // claim) is the fence.
    return { kind: "claimed", version: await store.writeClaim(ref, claim, existing.version), created: false };
  }
  const other = await store.readPool(holder.pool);
  if (other !== undefined && holdsAddress(other.pool, ref.address)) return { kind: "taken", by: holder };
  if (other !== undefined) {
    // Fence: any holder that read this pool before we looked now fails its write.
    await store.writePool(holder.pool, other.pool, other.version);
  }
  return { kind: "claimed", version: await store.writeClaim(ref, claim, existing.version), created: false };
}

/** Deletes the claim if it still names exactly this pool and key; leaves any other claim alone. */
export async function dropClaim(store: IpamStore, ref: ClaimRef, pool: PoolRef, key: AttachmentKey): Promise<void> {
  const existing = await store.readClaim(ref);
  if (existing === undefined || !samePoolRef(existing.claim.pool, pool) || !sameKey(existing.claim.key, key)) return;
  try {
    await store.deleteClaim(ref, existing.version);
  } catch (error) {
    // Changed in between: somebody else owns it now; nothing of ours to drop.
    if (!(error instanceof StoreConflictError)) throw error;
  }
}

/** The claim reference for an offset of a pool. */
export function claimRefFor(pool: PoolRef, offset: bigint): ClaimRef {
  return { network: pool.network, address: formatIp(ipAt(parseCidr(pool.cidr), offset)) };
}
