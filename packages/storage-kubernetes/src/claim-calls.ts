import { randomUUID } from "node:crypto";
import {
  type Claim,
  type ClaimRef,
  cidrContains,
  formatIp,
  type Ip,
  parseIp,
  type ScannedClaim,
  type StoredClaim,
  type Version,
} from "@ipamkit/core";
import { type ListedPool, resolveLegacyHolder } from "./legacy.js";
import { addressFromReservationName, reservationName } from "./names.js";
import { ANNOTATION, type KubeObject, RESERVATION } from "./objects.js";
import { readReservation, reservationFor } from "./orip.js";
import { listIPPools } from "./pool-calls.js";
import { baseAt, forget, label, put, remember, type StoreContext } from "./store-context.js";

type LazyPools = () => Promise<ListedPool[]>;

/** IPPools listed once, on first need (only Whereabouts-written reservations need them). */
function listedPools(ctx: StoreContext): LazyPools {
  let listed: Promise<ListedPool[]> | undefined;
  return () => {
    listed ??= listIPPools(ctx);
    return listed;
  };
}

/**
 * The claims of `network` among listed reservations, one per address, in address order:
 * ipamkit's by their annotations; Whereabouts' by name, kept only if the name re-encodes from the
 * address and a pool of the network contains it.
 */
async function claimsAmong(
  objects: readonly KubeObject[],
  network: string,
  pools: LazyPools,
): Promise<{ ref: ClaimRef; object: KubeObject }[]> {
  const found = new Map<string, KubeObject>();
  for (const object of objects) {
    const name = object.metadata?.name ?? "";
    const annotations = object.metadata?.annotations ?? {};
    const annotated = annotations[ANNOTATION.address];
    if (annotated !== undefined) {
      if (annotations[ANNOTATION.network] === network && !found.has(annotated)) found.set(annotated, object);
      continue;
    }
    const candidate = addressFromReservationName(name, network);
    if (candidate === undefined) continue;
    let ip: Ip;
    try {
      ip = parseIp(candidate);
    } catch {
      continue;
    }
    const address = formatIp(ip);
    if (reservationName({ network, address }) !== name || found.has(address)) continue;
    if ((await pools()).some((p) => p.ref.network === network && cidrContains(p.cidr, ip))) found.set(address, object);
  }
  return [...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([address, object]) => ({ ref: { network, address }, object }));
}

/** A reservation object read as its claim (a Whereabouts one resolved from the pools). */
async function storedClaim(ctx: StoreContext, ref: ClaimRef, object: KubeObject, name: string, pools: LazyPools): Promise<StoredClaim> {
  const version = remember(ctx, RESERVATION, name, object);
  const read = readReservation(ref, object, label(ctx, RESERVATION, name));
  const claim: Claim = read.kind === "claim" ? read.claim : resolveLegacyHolder(ref, read.podRef, await pools());
  return { claim, version };
}

export async function readClaim(ctx: StoreContext, ref: ClaimRef): Promise<StoredClaim | undefined> {
  const name = reservationName(ref);
  const object = await ctx.api.get(RESERVATION, name);
  if (object === undefined) return undefined;
  return storedClaim(ctx, ref, object, name, listedPools(ctx));
}

export async function writeClaim(ctx: StoreContext, ref: ClaimRef, claim: Claim, expected: Version | undefined): Promise<Version> {
  const name = reservationName(ref);
  const base = expected === undefined ? undefined : await baseAt(ctx, RESERVATION, name, expected);
  const body = reservationFor(ref, claim, base, { name, namespace: ctx.namespace, writeId: randomUUID() });
  return remember(ctx, RESERVATION, name, await put(ctx, RESERVATION, body, expected));
}

export async function deleteClaim(ctx: StoreContext, ref: ClaimRef, expected: Version): Promise<void> {
  const name = reservationName(ref);
  await ctx.api.remove(RESERVATION, name, expected);
  forget(ctx, RESERVATION, name);
}

/** The claims of these networks from one paged list of the reservation objects; with contents, each as readClaim reads it. */
export async function listClaims(ctx: StoreContext, networks: readonly string[], contents: boolean): Promise<ClaimRef[] | ScannedClaim[]> {
  const objects = await ctx.api.list(RESERVATION);
  const pools = listedPools(ctx);
  const refs: ClaimRef[] = [];
  const out: ScannedClaim[] = [];
  for (const network of new Set(networks))
    for (const { ref, object } of await claimsAmong(objects, network, pools)) {
      refs.push(ref);
      if (!contents) continue;
      const name = object.metadata?.name ?? "";
      // an object not at its claim's name is not what readClaim reads there: read that instead
      const stored = name === reservationName(ref) ? await storedClaim(ctx, ref, object, name, pools) : await readClaim(ctx, ref);
      if (stored !== undefined) out.push({ ref, stored });
    }
  return contents ? out : refs;
}
