import type { ClaimRef, PoolRef } from "@ipamkit/core";

/**
 * Key layout, under a configurable prefix (default `/ipamkit/`):
 *
 *   <prefix>pools/<network>/<cidr>/meta            {"cidr","network"}: exists while the pool does; rewritten by
 *                                                  every change, so its mod revision is the pool's version
 *   <prefix>pools/<network>/<cidr>/cursor          round-robin cursor (decimal offset)
 *   <prefix>pools/<network>/<cidr>/ip/<offset>     one reservation (JSON), offset in decimal
 *   <prefix>pools/<network>/<cidr>/key/<key>       the offset held by an attachment key (containerID/ifName)
 *   <prefix>claims/<network>/<address>             one overlapping-range claim (JSON)
 *
 * Allocations claim `ip/<offset>` and `key/<key>` with create-if-absent in one transaction, so two
 * allocators in one pool conflict only when they pick the same address or the same key.
 * Each segment is percent-encoded (also `_`), and the unnamed network "" is `_`, so every name
 * maps to one key and back.
 */
const segment = (text: string) => (text === "" ? "_" : encodeURIComponent(text).replaceAll("_", "%5F"));
const unsegment = (text: string) => (text === "_" ? "" : decodeURIComponent(text));

export interface Layout {
  /** Prefix of every key of one pool. */
  pool(ref: PoolRef): string;
  meta(ref: PoolRef): string;
  cursor(ref: PoolRef): string;
  ip(ref: PoolRef, offset: bigint): string;
  key(ref: PoolRef, key: string): string;
  claim(ref: ClaimRef): string;
  poolsPrefix: string;
  claimsPrefix(network: string): string;
  parsePool(key: string): PoolRef | undefined;
  parseClaim(key: string): ClaimRef | undefined;
}

export function layout(prefix: string): Layout {
  const root = prefix.endsWith("/") ? prefix : `${prefix}/`;
  const poolsPrefix = `${root}pools/`;
  const claimsRoot = `${root}claims/`;
  const split = (key: string, base: string) => {
    if (!key.startsWith(base)) return undefined;
    const parts = key.slice(base.length).split("/");
    if (parts.length !== 2 || parts[0] === undefined || parts[1] === undefined || parts[1] === "") return undefined;
    try {
      return [unsegment(parts[0]), unsegment(parts[1])] as const;
    } catch {
      return undefined;
    }
  };
  return {
    pool: (ref) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}/`,
    meta: (ref) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}/meta`,
    cursor: (ref) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}/cursor`,
    ip: (ref, offset) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}/ip/${offset}`,
    key: (ref, key) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}/key/${segment(key)}`,
    claim: (ref) => `${claimsRoot}${segment(ref.network)}/${segment(ref.address)}`,
    poolsPrefix,
    claimsPrefix: (network) => `${claimsRoot}${segment(network)}/`,
    parsePool: (key) => {
      if (!key.endsWith("/meta")) return undefined;
      const parts = split(key.slice(0, -"/meta".length), poolsPrefix);
      return parts === undefined ? undefined : { network: parts[0], cidr: parts[1] };
    },
    parseClaim: (key) => {
      const parts = split(key, claimsRoot);
      return parts === undefined ? undefined : { network: parts[0], address: parts[1] };
    },
  };
}
