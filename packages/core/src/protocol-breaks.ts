/**
 * Deliberate protocol bugs, for the protocol model's trace link only (protocol-link.*.test.ts):
 * each of the first ones switches one step off exactly as the model's broken variant of the same
 * name does (model/ipam.pml), so that a counterexample spin finds for that variant can be replayed
 * against the code with the bug in it — and must fail there too. The sticky ones break rules the
 * model abstracts; the link's random schedules must find them. All off; nothing in the product
 * sets them, and the package index does not export this module.
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
  /** BROKEN_GIVEUP (block-ipam.ts): an ADD that claimed a block answers "exhausted" instead of planning again. */
  giveUpAfterClaim: false,
  /** Sticky (sticky.ts): an ADD never rebinds its pod's address; it allocates a new one. */
  stickyNoRebind: false,
  /** Sticky (sticky.ts): an ADD rebinds a kept address of any pod, not only its own pod's. */
  stickyAnyPod: false,
  /** Sticky (reconcile-plan.ts): a kept address is judged expired at once. */
  stickyExpireAtOnce: false,
  /** Sticky (ipam-release.ts): a DEL on a sticky network frees the address instead of keeping it. */
  stickyFreeAtDel: false,
};

/** Every break off again. */
export function resetProtocolBreaks(): void {
  for (const name of Object.keys(protocolBreaks) as (keyof typeof protocolBreaks)[]) protocolBreaks[name] = false;
}
