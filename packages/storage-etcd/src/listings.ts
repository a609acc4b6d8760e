import {
  type ClaimRef,
  claimFromRecord,
  comparePoolRefs,
  type PoolRef,
  type ScannedClaim,
  type ScannedPool,
  StoreCorruptError,
  type StoredClaim,
} from "@ipamkit/core";
import type { IKeyValue } from "etcd3";
import { STORE_NAME } from "./errors.js";
import type { EtcdConnection } from "./etcd-client.js";
import type { Layout } from "./layout.js";
import type { PoolReads } from "./pool-reads.js";

/** Range reads per `readClaims` transaction: below etcd's default `--max-txn-ops` (128). */
const READS_PER_TXN = 100;

const byAddress = (a: ClaimRef, b: ClaimRef) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

/** A claim key's value as a stored claim; undefined when the key is absent. */
export function storedClaim(key: string, kv: IKeyValue | undefined): StoredClaim | undefined {
  if (kv === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(kv.value.toString("utf8"));
  } catch {
    throw new StoreCorruptError(key, "not valid JSON", { component: STORE_NAME });
  }
  return { claim: claimFromRecord(value, key, STORE_NAME), version: kv.mod_revision };
}

/** Every pool that has keys, not only those with a meta key. */
export async function listPools(etcd: EtcdConnection, keys: Layout): Promise<PoolRef[]> {
  const found = await etcd.keysUnder("list pools", keys.poolsPrefix);
  // one whose meta was lost is listed too, so that reading it reports the damage (a reconciler
  // would otherwise never see it)
  const metas = new Set<string>();
  for (const k of found) {
    const [network, cidr, entry] = k.slice(keys.poolsPrefix.length).split("/");
    if (network !== undefined && cidr !== undefined && entry !== undefined) metas.add(`${keys.poolsPrefix}${network}/${cidr}/meta`);
  }
  return [...metas].flatMap((k) => keys.parsePool(k) ?? []).sort(comparePoolRefs);
}

/** Every pool in one paged range read of every pool's keys (at one revision), each read as readPool's full read reads it. */
export async function scanPools(etcd: EtcdConnection, keys: Layout, reads: PoolReads): Promise<ScannedPool[]> {
  const response = await etcd.readPrefix("scan pools", keys.poolsPrefix);
  const revision = BigInt(response.revision);
  const groups = new Map<string, IKeyValue[]>();
  for (const kv of response.kvs) {
    const [network, cidr, entry] = kv.key.toString("utf8").slice(keys.poolsPrefix.length).split("/");
    if (network === undefined || cidr === undefined || entry === undefined) continue;
    const group = `${keys.poolsPrefix}${network}/${cidr}/`;
    const kvs = groups.get(group);
    if (kvs === undefined) groups.set(group, [kv]);
    else kvs.push(kv);
  }
  const found = [...groups].flatMap(([group, kvs]) => {
    const ref = keys.parsePool(`${group}meta`);
    return ref === undefined ? [] : [{ ref, group, kvs }];
  });
  const out: ScannedPool[] = [];
  for (const { ref, group, kvs } of found.sort((a, b) => comparePoolRefs(a.ref, b.ref))) {
    try {
      // keys not where readPool reads this pool: read it as readPool does (no pool written so)
      const stored = keys.pool(ref) === group ? reads.fromKeys(ref, kvs, revision) : await reads.readFull(ref);
      if (stored !== undefined) out.push({ ref, stored });
    } catch (error) {
      out.push({ ref, error: error instanceof Error ? error : new Error(String(error)) });
    }
  }
  return out;
}

/** Up to READS_PER_TXN claims per request: one transaction of range reads, no compares. */
export async function readClaims(etcd: EtcdConnection, keys: Layout, refs: readonly ClaimRef[]): Promise<(StoredClaim | undefined)[]> {
  const out: (StoredClaim | undefined)[] = [];
  for (let i = 0; i < refs.length; i += READS_PER_TXN) {
    const names = refs.slice(i, i + READS_PER_TXN).map((r) => keys.claim(r));
    const success = names.map((name) => ({ request_range: { key: Buffer.from(name) } }));
    const result = await etcd.call(`read ${names.length} claims`, () => etcd.client.kv.txn({ success }));
    out.push(...names.map((name, n) => storedClaim(name, result.responses[n]?.response_range.kvs[0])));
  }
  return out;
}

/** Each network's claims in one paged range read; a claim key not where readClaim reads it is left out, as readClaim would miss it. */
export async function scanClaims(etcd: EtcdConnection, keys: Layout, networks: readonly string[]): Promise<ScannedClaim[]> {
  const out: ScannedClaim[] = [];
  for (const network of new Set(networks)) {
    const response = await etcd.readPrefix(`scan claims of network ${network}`, keys.claimsPrefix(network));
    const found = response.kvs.flatMap((kv) => {
      const key = kv.key.toString("utf8");
      const ref = keys.parseClaim(key);
      return ref === undefined || ref.network !== network || keys.claim(ref) !== key ? [] : [{ ref, key, kv }];
    });
    found.sort((a, b) => byAddress(a.ref, b.ref));
    for (const { ref, key, kv } of found) {
      const stored = storedClaim(key, kv);
      if (stored !== undefined) out.push({ ref, stored });
    }
  }
  return out;
}

/** The claims of these networks (keys only), one paged range read each. */
export async function listClaims(etcd: EtcdConnection, keys: Layout, networks: readonly string[]): Promise<ClaimRef[]> {
  const out: ClaimRef[] = [];
  for (const network of networks) {
    const found = await etcd.keysUnder("list claims", keys.claimsPrefix(network));
    out.push(
      ...found
        .flatMap((k) => keys.parseClaim(k) ?? [])
        .filter((r) => r.network === network)
        .sort(byAddress),
    );
  }
  return out;
}
