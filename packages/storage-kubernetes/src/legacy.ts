import { attachmentKey, type Cidr, type Claim, type ClaimRef, cidrContains, cidrOf, type PoolRef, parseIp } from "@ipamkit/core";
import { poolFromIPPool } from "./ippool.js";
import type { KubeObject } from "./objects.js";

/** An IPPool found by a LIST: its ref (network from the name, range from the spec), the object, and its label. */
export interface ListedPool {
  ref: PoolRef;
  cidr: Cidr;
  object: KubeObject;
  label: string;
}

/** The holder key of a Whereabouts reservation that no pool holds (it has no container ID). */
const UNKNOWN_HOLDER = attachmentKey({ containerId: "whereabouts", ifName: "" }, { allowLegacy: true });

/**
 * The claim a Whereabouts-written OverlappingRangeIPReservation stands for. It names no pool, so
 * the pools are the truth (as for every claim, see core's DESIGN.md): the first pool of the
 * network that holds the address — preferring one whose entry has the reservation's podref — is
 * its holder, and the claim is live. When no pool holds it, the claim is dangling (a Whereabouts
 * DEL or ADD that stopped between its two writes) and names the first pool containing the address
 * (or the address's host route if none does), which core fences before taking it over.
 */
export function resolveLegacyHolder(ref: ClaimRef, podRef: string | undefined, pools: readonly ListedPool[]): Claim {
  const ip = parseIp(ref.address);
  const containing = pools.filter((p) => p.ref.network === ref.network && cidrContains(p.cidr, ip));
  let holder: Claim | undefined;
  for (const p of containing) {
    const r = poolFromIPPool(p.ref, p.object, p.label).atOffset(ip.value - p.cidr.network);
    if (r === undefined) continue;
    const claim: Claim = { pool: p.ref, key: r.key, ...(r.podRef === undefined ? {} : { podRef: r.podRef }) };
    if (podRef === undefined || r.podRef === podRef) return claim;
    holder ??= claim;
  }
  if (holder !== undefined) return holder;
  const pool = containing[0]?.ref ?? { network: ref.network, cidr: cidrOf(ip, ip.family === 4 ? 32 : 128).text };
  return { pool, key: UNKNOWN_HOLDER, ...(podRef === undefined ? {} : { podRef }) };
}
