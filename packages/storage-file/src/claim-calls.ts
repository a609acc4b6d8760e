import { join } from "node:path";
import type { Claim, ClaimRef, StoredClaim, Version } from "@ipamkit/core";
import { encodeClaimFields } from "./codec.js";
import { DELETED, versionOf } from "./generation-format.js";
import { checkedName, children, claimDecoder, claimDir, claimLabel, type FileContext } from "./store-context.js";

async function readClaim(ctx: FileContext, ref: ClaimRef): Promise<StoredClaim | undefined> {
  const snapshot = await ctx.claims.read(claimDir(ctx, ref), claimLabel(ref), claimDecoder);
  if (snapshot === undefined || snapshot.value === DELETED) return undefined;
  return { claim: snapshot.value, version: versionOf(snapshot.gen) };
}

export async function readClaims(ctx: FileContext, refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
  ctx.guard();
  return Promise.all(refs.map((ref) => readClaim(ctx, ref)));
}

export async function writeClaim(ctx: FileContext, ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
  ctx.guard();
  const normalized: Claim = {
    pool: { network: claim.pool.network, cidr: claim.pool.cidr },
    key: claim.key,
    ...(claim.podRef === undefined ? {} : { podRef: claim.podRef }),
  };
  return ctx.claims.commit(claimDir(ctx, ref), claimLabel(ref), expected, encodeClaimFields(normalized), claimDecoder, normalized);
}

export async function deleteClaim(ctx: FileContext, ref: ClaimRef, expected: Version): Promise<void> {
  ctx.guard();
  await ctx.claims.commit(claimDir(ctx, ref), claimLabel(ref), expected, DELETED, claimDecoder);
}

async function listClaimsOf(ctx: FileContext, network: string): Promise<ClaimRef[]> {
  const dir = join(ctx.claimsRoot, checkedName("network name", network));
  const addresses = await children(ctx, dir);
  const live = await Promise.all(addresses.map((a) => ctx.claims.exists(join(dir, a.name), claimLabel({ network, address: a.text }))));
  return addresses
    .filter((_, i) => live[i])
    .map((a) => ({ network, address: a.text }))
    .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

export async function listClaims(ctx: FileContext, networks: readonly string[]): Promise<ClaimRef[]> {
  ctx.guard();
  const out: ClaimRef[] = [];
  for (const network of networks) out.push(...(await listClaimsOf(ctx, network)));
  return out;
}
