/**
 * Deliberate protocol bugs, for the protocol model's trace link only (protocol-link.*.test.ts):
 * each switches one step off exactly as the model's broken variant of the same name does
 * (model/ipam.pml), so that a counterexample spin finds for that variant can be replayed against
 * the code with the bug in it — and must fail there too. All off; nothing in the product sets
 * them, and the package index does not export this module.
 */
export const protocolBreaks = {
  /** BROKEN_NOFENCE (claims.ts): a dangling claim of another pool is taken over without fencing that pool. */
  noFence: false,
  /** BROKEN_NOTOUCH (block-ipam.ts): an ADD's choice of block is not fenced (no touch, no claim check). */
  noTouch: false,
  /** BROKEN_STALE (ipam-release.ts): a release retried after a conflict takes the fresh version but keeps its first decision. */
  staleDecision: false,
  /** BROKEN_REPAIR (claim-repair.ts): a claim repair deletes or rewrites without fencing the named pool first. */
  repairNoFence: false,
  /** BROKEN_PODREF (ipam-release.ts): a conditional release releases by pod name (the pool's last entry of that pod). */
  releaseByPodName: false,
};

/** Every break off again. */
export function resetProtocolBreaks(): void {
  for (const name of Object.keys(protocolBreaks) as (keyof typeof protocolBreaks)[]) protocolBreaks[name] = false;
}
