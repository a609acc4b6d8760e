import { type Cidr, cidrOf, familyBits, type Ip, parseIp } from "@ipamkit/core";

// Whereabouts reads `range`, the top-level `range_start`/`range_end` and `gateway` with
// k8s.io/utils/net's ParseIPSloppy / ParseCIDRSloppy: Go's pre-1.17 parser, which takes IPv4
// octets with leading zeros as decimal (`00192.00168.1.0/24` is 192.168.1.0/24). `exclude`,
// `ipRanges[].range_start`/`range_end` and routes use the strict parser (no leading zeros).
// These functions answer as the sloppy parser does; the result is canonical.

/** Go's old `dtoi`: a run of decimal digits below 0xFFFFFF, the whole text. */
function decimal(text: string): number | undefined {
  if (!/^[0-9]+$/.test(text)) return undefined;
  let n = 0;
  for (const ch of text) {
    n = n * 10 + (ch.charCodeAt(0) - 48);
    if (n >= 0xffffff) return undefined;
  }
  return n;
}

/** An address as ParseIPSloppy reads it, or undefined where it returns nil. */
export function parseIpSloppy(text: string): Ip | undefined {
  if (typeof text !== "string" || text === "") return undefined;
  if (!text.includes(":")) {
    const parts = text.split(".");
    if (parts.length !== 4) return undefined;
    const octets = parts.map(decimal);
    if (octets.some((o) => o === undefined || o > 255)) return undefined;
    return parseIp(octets.join("."));
  }
  try {
    return parseIp(text);
  } catch {
    return undefined;
  }
}

/** `ip/prefix` as ParseCIDRSloppy reads it: the address as written and its network, or undefined on error. */
export function parseCidrSloppy(text: string): { ip: Ip; cidr: Cidr } | undefined {
  if (typeof text !== "string") return undefined;
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIpSloppy(text.slice(0, slash));
  const prefix = decimal(text.slice(slash + 1));
  if (ip === undefined || prefix === undefined || prefix > familyBits(ip.family)) return undefined;
  return { ip, cidr: cidrOf(ip, prefix) };
}

/** Go's strict net.ParseIP (no leading zeros in IPv4 octets), or undefined. */
export function parseIpStrict(text: string): Ip | undefined {
  if (typeof text !== "string") return undefined;
  if (!text.includes(":") && text.split(".").some((octet) => octet.length > 1 && octet.startsWith("0"))) return undefined;
  try {
    return parseIp(text);
  } catch {
    return undefined;
  }
}

/** Go's strict net.ParseCIDR, or undefined. */
export function parseCidrStrict(text: string): Cidr | undefined {
  if (typeof text !== "string") return undefined;
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIpStrict(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (ip === undefined || !/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  return prefix > familyBits(ip.family) ? undefined : cidrOf(ip, prefix);
}
