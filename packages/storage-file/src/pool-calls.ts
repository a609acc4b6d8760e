import { join } from "node:path";
import { comparePoolRefs, type Pool, type PoolRef, poolId, type StoredPool, type Version } from "@ipamkit/core";
import { encodePoolFields } from "./codec.js";
import { DELETED, versionOf } from "./generation-format.js";
import { children, type FileContext, poolDecoder, poolDir, poolLabel } from "./store-context.js";

export async function readPool(ctx: FileContext, ref: PoolRef): Promise<StoredPool | undefined> {
  ctx.guard();
  const snapshot = await ctx.pools.read(poolDir(ctx, ref), poolLabel(ref), poolDecoder(ref));
  if (snapshot === undefined || snapshot.value === DELETED) return undefined;
  return { pool: snapshot.value, version: versionOf(snapshot.gen) };
}

export async function writePool(ctx: FileContext, ref: PoolRef, pool: Pool, expected: Version | undefined): Promise<Version> {
  ctx.guard();
  // Reading it back would give an equal pool; cache this one when it also carries the same name.
  const cacheable = pool.name === poolId(ref) ? pool : undefined;
  return ctx.pools.commit(poolDir(ctx, ref), poolLabel(ref), expected, encodePoolFields(ref, pool), poolDecoder(ref), cacheable);
}

export async function listPools(ctx: FileContext): Promise<PoolRef[]> {
  ctx.guard();
  const out: PoolRef[] = [];
  for (const network of await children(ctx, ctx.poolsRoot)) {
    const dir = join(ctx.poolsRoot, network.name);
    const cidrs = await children(ctx, dir);
    const live = await Promise.all(
      cidrs.map((c) => ctx.pools.exists(join(dir, c.name), poolLabel({ network: network.text, cidr: c.text }))),
    );
    cidrs.forEach((c, i) => {
      if (live[i]) out.push({ network: network.text, cidr: c.text });
    });
  }
  return out.sort(comparePoolRefs);
}
