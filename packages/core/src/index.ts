export type {
  AllocateRequest,
  Allocation,
  AllocationPolicy,
  ConditionalReleaseOutcome,
  MultiAllocateRequest,
  Release,
} from "./allocator.js";
export { allocate, allocateAll, findFree, release, releaseIf } from "./allocator.js";
export type { BlockPool, NodeBlockIpam, NodeBlockIpamOptions } from "./block-ipam.js";
export { createNodeBlockIpam } from "./block-ipam.js";
export type { ClaimRepair, RepairClaimOptions } from "./claim-repair.js";
export { claimMatches, claimOf, holderAt, repairClaim } from "./claim-repair.js";
export type { ClaimOutcome, RecalledClaim } from "./claims.js";
export { claimAddress, claimRefFor, dropClaim, planClaim, readClaimsOf, readClaimsThrough, scanClaimsOf } from "./claims.js";
export { completeStore, delegatingStore } from "./complete-store.js";
export type { IpamErrorCode, IpamErrorOptions } from "./errors.js";
export {
  AddressUnavailableError,
  InvalidAddressError,
  InvalidKeyError,
  InvalidRangeError,
  InvalidRequestError,
  IpamError,
  isIpamError,
  isOutcomeUnknown,
  PoolCorruptError,
  RangeExhaustedError,
  StoreAccessDeniedError,
  StoreConflictError,
  StoreCorruptError,
  StoreRejectedError,
  StoreUnavailableError,
} from "./errors.js";
export type { Cidr, Family, Ip } from "./ip.js";
export { cidrContains, cidrOf, cidrsOverlap, compareIp, familyBits, formatIp, ipAt, offsetOf, parseCidr, parseIp } from "./ip.js";
export type { AllocateInput, Assigned, Exclusive, Ipam, IpamOptions, Released, ReleaseInput } from "./ipam.js";
export { createIpam, RELEASES_PER_WRITE } from "./ipam.js";
export type { IpamCacheOptions } from "./ipam-cache.js";
export { IpamCache } from "./ipam-cache.js";
export type { AttachmentKey } from "./key.js";
export { attachmentKey, formatKey, isLegacyKey, parseKey, sameKey } from "./key.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export { createMemoryStore, MEMORY_STORE_NAME } from "./memory-store.js";
export type { BlockLayout } from "./node-blocks.js";
export {
  AFFINITY_IF_NAME,
  affinityClaimRef,
  affinityNetworkOf,
  blockLayout,
  blockPoolRef,
  blockRange,
  isAffinityNetwork,
  nodeBlockOrder,
} from "./node-blocks.js";
export type { PoolInit } from "./pool.js";
export { Pool } from "./pool.js";
export { foldEntry } from "./pool-cache.js";
export type { PoolRecord, ReservationRecord } from "./pool-record.js";
export { claimFromRecord, claimToRecord, poolFromRecord, poolToRecord, reservationToRecord } from "./pool-record.js";
export type { OffsetInterval, Range, RangeSpec } from "./range.js";
export { blockedAt, isAssignable, MIN_RANGE_PREFIX, parseRange } from "./range.js";
export type {
  ClaimAudit,
  ClaimAuditInput,
  ClaimFinding,
  ClaimFindingKind,
  JudgeOptions,
  KeepReason,
  NetworkStatusEntry,
  ObservedReservation,
  OrphanReason,
  PlanInput,
  PodFacts,
  Verdict,
} from "./reconcile-plan.js";
export { auditClaims, compareObserved, judgeReservation, planReconcile, podRefOf } from "./reconcile-plan.js";
export type { Reservation } from "./reservation.js";
export { isKept, keepExpired, sameReservation } from "./reservation.js";
export type { AttemptContext, ConflictCounter, RetryOptions } from "./retry.js";
export { withConflictRetry } from "./retry.js";
export { sliceRange } from "./slice-range.js";
export type {
  Claim,
  ClaimReadOptions,
  ClaimRef,
  IpamStore,
  ListOptions,
  PoolRef,
  ScannedClaim,
  ScannedPool,
  StoreBackend,
  StoreCapabilities,
  StoredClaim,
  StoredPool,
  StoreWrite,
  Version,
} from "./store.js";
export { claimId, comparePoolRefs, poolId, samePoolRef } from "./store.js";
