import type { ClaimRef, PoolRef } from "@ipamkit/core";

/**
 * Key layout, under a configurable prefix (default `/ipamkit/`):
 *
 *   <prefix>pools/<network>/<cidr>       one JSON pool document per CIDR and network
 *   <prefix>claims/<network>/<address>   one JSON claim per address held with overlap protection
 *
 * Each segment is percent-encoded (also `_`), and the unnamed network "" is `_`, so every name
 * maps to one key and back. Versions are the keys' mod revisions.
 */
const segment = (text: string) => (text === "" ? "_" : encodeURIComponent(text).replaceAll("_", "%5F"));
const unsegment = (text: string) => (text === "_" ? "" : decodeURIComponent(text));

export interface Layout {
  pool(ref: PoolRef): string;
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
    pool: (ref) => `${poolsPrefix}${segment(ref.network)}/${segment(ref.cidr)}`,
    claim: (ref) => `${claimsRoot}${segment(ref.network)}/${segment(ref.address)}`,
    poolsPrefix,
    claimsPrefix: (network) => `${claimsRoot}${segment(network)}/`,
    parsePool: (key) => {
      const parts = split(key, poolsPrefix);
      return parts === undefined ? undefined : { network: parts[0], cidr: parts[1] };
    },
    parseClaim: (key) => {
      const parts = split(key, claimsRoot);
      return parts === undefined ? undefined : { network: parts[0], address: parts[1] };
    },
  };
}
