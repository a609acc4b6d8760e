import { randomUUID } from "node:crypto";
import {
  comparePoolRefs,
  formatIp,
  ipAt,
  type Pool,
  type PoolRef,
  type ScannedPool,
  StoreCorruptError,
  type StoredPool,
  sameKey,
  type Version,
} from "@ipamkit/core";
import { readClaim } from "./claim-calls.js";
import { STORE_NAME } from "./errors.js";
import { checkPoolOwner, ipPoolFor, ipPoolRange, poolFromIPPool, WHEREABOUTS_OFFSET_LIMIT } from "./ippool.js";
import type { ListedPool } from "./legacy.js";
import { ipPoolName, networkOfPool } from "./names.js";
import { ANNOTATION, IPPOOL, isObject, type KubeObject } from "./objects.js";
import { annotatedRef, listSliceOwners, resolveOwner } from "./pool-owners.js";
import { fieldsKept, ifNamesPruned, warnPruningOnce } from "./pruning.js";
import { baseAt, label, put, remember, type StoreContext } from "./store-context.js";

/**
 * Every IPPool of the namespace from one paged list, in pool order, each with its owner
 * (pool-owners.ts: ipamkit's annotations, else the name and the NodeSlicePools, listed only when
 * needed); a name not Whereabouts' for its range is corrupt.
 */
export async function listIPPools(ctx: StoreContext): Promise<ListedPool[]> {
  const out: ListedPool[] = [];
  const pending: { prefix: string; listed: Omit<ListedPool, "ref"> }[] = [];
  for (const object of await ctx.api.list(IPPOOL)) {
    const name = object.metadata?.name ?? "";
    const where = label(ctx, IPPOOL, name);
    const cidr = ipPoolRange(object, where);
    const annotated = annotatedRef(name, cidr, object, where);
    if (annotated !== undefined) {
      out.push({ ref: annotated, cidr, object, label: where });
      continue;
    }
    const network = networkOfPool(name, cidr.text);
    if (network === undefined)
      throw new StoreCorruptError(where, `its name is not Whereabouts' name for spec.range ${cidr.text}`, {
        component: STORE_NAME,
      });
    if (network === "") out.push({ ref: { network, cidr: cidr.text }, cidr, object, label: where });
    else pending.push({ prefix: network, listed: { cidr, object, label: where } });
  }
  if (pending.length > 0) {
    const slices = await listSliceOwners(ctx.api, ctx.warn);
    for (const { prefix, listed } of pending) out.push({ ref: resolveOwner(prefix, listed.cidr, slices), ...listed });
  }
  return out.sort((a, b) => comparePoolRefs(a.ref, b.ref));
}

/** An IPPool object read as its pool, decoded again only when its version changed. */
function storedPool(ctx: StoreContext, ref: PoolRef, name: string, object: KubeObject): StoredPool {
  checkPoolOwner(ref, object, label(ctx, IPPOOL, name));
  const version = remember(ctx, IPPOOL, name, object);
  const cached = ctx.decoded.get(name);
  if (cached?.version === version) return cached;
  const stored = { pool: poolFromIPPool(ref, object, label(ctx, IPPOOL, name)), version };
  ctx.decoded.set(name, stored);
  return stored;
}

/** Every pool, each read from one paged list of the IPPools (a corrupt one with its error). */
async function scanPools(ctx: StoreContext): Promise<ScannedPool[]> {
  return (await listIPPools(ctx)).map((listed): ScannedPool => {
    try {
      return { ref: listed.ref, stored: storedPool(ctx, listed.ref, listed.object.metadata?.name ?? "", listed.object) };
    } catch (error) {
      return { ref: listed.ref, error: error instanceof Error ? error : new Error(String(error)) };
    }
  });
}

export async function readPool(ctx: StoreContext, ref: PoolRef): Promise<StoredPool | undefined> {
  const name = ipPoolName(ref);
  const object = await ctx.api.get(IPPOOL, name);
  if (object === undefined) {
    ctx.decoded.delete(name);
    return undefined;
  }
  return storedPool(ctx, ref, name, object);
}

/** The pool's new offsets ≥ 2^63 whose address an ORIP of the same attachment claims (rare: one GET each). */
async function guardedHighOffsets(ctx: StoreContext, ref: PoolRef, pool: Pool, base: KubeObject | undefined): Promise<Set<string>> {
  const before = isObject(base?.spec?.allocations) ? base.spec.allocations : {};
  const guarded = new Set<string>();
  for (const r of pool) {
    const key = r.offset.toString();
    if (r.offset < WHEREABOUTS_OFFSET_LIMIT || Object.hasOwn(before, key)) continue;
    const claim = await readClaim(ctx, { network: ref.network, address: formatIp(ipAt(pool.cidr, r.offset)) });
    if (claim !== undefined && sameKey(claim.claim.key, r.key)) guarded.add(key);
  }
  return guarded;
}

export async function writePool(ctx: StoreContext, ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
  const name = ipPoolName(ref);
  const base = expected === undefined ? undefined : await baseAt(ctx, IPPOOL, name, expected);
  const guardedOffsets = ctx.resolved.whereaboutsCompatible ? await guardedHighOffsets(ctx, ref, pool, base) : undefined;
  const bodyFor = (over: KubeObject | undefined, recordIfNames: boolean) =>
    ipPoolFor(ref, pool, over, {
      name,
      namespace: ctx.namespace,
      writeId: randomUUID(),
      whereaboutsCompatible: ctx.resolved.whereaboutsCompatible,
      recordIfNames,
      ...(guardedOffsets === undefined ? {} : { guardedOffsets }),
    });
  // a pool that carries the annotation was found on such a CRD before (by any ipamkit process)
  const recorded = ctx.prunesIfNames || base?.metadata?.annotations?.[ANNOTATION.ifnames] !== undefined;
  let written = await put(ctx, IPPOOL, bodyFor(base, recorded), expected);
  let version = remember(ctx, IPPOOL, name, written);
  const ifNamesLost = ifNamesPruned(pool, written);
  if (ifNamesLost && !recorded) {
    // First seen here: record the interfaces at once, over what was just stored. Best effort —
    // the write above stands whatever happens to this one; a conflict means another writer
    // came in between, and the next ipamkit write of the pool records them.
    ctx.prunesIfNames = true;
    try {
      written = await ctx.api.replace(IPPOOL, bodyFor(written, true));
      version = remember(ctx, IPPOOL, name, written);
    } catch {
      // the pool stays at `version`
    }
  }
  if (fieldsKept(pool, written) && !ifNamesLost) ctx.decoded.set(name, { pool, version });
  else {
    ctx.decoded.delete(name);
    warnPruningOnce(ctx.warn, label(ctx, IPPOOL, name), ifNamesLost);
  }
  return version;
}

/** The refs of every pool; with contents, every pool as scanPools reads it. */
export async function listPools(ctx: StoreContext, contents: boolean): Promise<PoolRef[] | ScannedPool[]> {
  return contents ? scanPools(ctx) : (await listIPPools(ctx)).map((p) => p.ref);
}
