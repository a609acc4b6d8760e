import { Address4, Address6 } from "ip-address";
import { InvalidAddressError } from "./errors.js";

/** Address family: 4 or 6. */
export type Family = 4 | 6;

/** An IP address as a family plus its full-width unsigned value (32 or 128 bits). */
export interface Ip {
  readonly family: Family;
  readonly value: bigint;
}

export function familyBits(family: Family): number {
  return family === 4 ? 32 : 128;
}

/**
 * Parses an IPv4 or IPv6 address without a prefix. IPv4 octets with leading zeros are read as
 * decimal (Whereabouts accepts them); IPv6 zone ids and prefixes are rejected.
 */
export function parseIp(text: string): Ip {
  const trimmed = text.trim();
  if (trimmed.includes("/")) throw new InvalidAddressError(text, "a prefix length is not allowed here");
  if (trimmed.includes("%")) throw new InvalidAddressError(text, "zone ids are not allowed");
  if (/^[0-9.]+$/.test(trimmed)) {
    const octets = trimmed.split(".");
    if (octets.length !== 4 || octets.some((o) => o.length === 0 || o.length > 3)) {
      throw new InvalidAddressError(text, "not a dotted-quad IPv4 address");
    }
    const normalized = octets.map((o) => String(Number.parseInt(o, 10))).join(".");
    if (!Address4.isValid(normalized)) throw new InvalidAddressError(text, "octet out of range");
    return { family: 4, value: new Address4(normalized).bigInt() };
  }
  if (trimmed.includes(":") && Address6.isValid(trimmed)) {
    return { family: 6, value: new Address6(trimmed).bigInt() };
  }
  throw new InvalidAddressError(text, "neither IPv4 nor IPv6");
}

/** Canonical text: dotted quad for IPv4, RFC 5952 form for IPv6. */
export function formatIp(ip: Ip): string {
  return ip.family === 4 ? Address4.fromBigInt(ip.value).correctForm() : Address6.fromBigInt(ip.value).correctForm();
}

export function compareIp(a: Ip, b: Ip): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

/** A CIDR in canonical (network) form. */
export interface Cidr {
  readonly family: Family;
  readonly prefix: number;
  /** The network address (host bits zero). */
  readonly network: bigint;
  /** Number of addresses in the CIDR (2^(bits - prefix)). */
  readonly size: bigint;
  /** Canonical text, e.g. `192.168.2.224/28`, `2001:db8::/64`. */
  readonly text: string;
}

/**
 * Parses `address/prefix` and canonicalises it to the network address
 * (`192.168.2.225/28` → `192.168.2.224/28`, as Whereabouts stores `spec.range`).
 */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf("/");
  if (slash < 0) throw new InvalidAddressError(text, "a CIDR needs a /prefix");
  const ip = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1).trim();
  const bits = familyBits(ip.family);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) {
    throw new InvalidAddressError(text, `prefix length must be 0..${bits}`);
  }
  return cidrOf(ip, Number(prefixText));
}

/** The CIDR of the given prefix length that contains `ip`. */
export function cidrOf(ip: Ip, prefix: number): Cidr {
  const hostBits = BigInt(familyBits(ip.family) - prefix);
  const size = 1n << hostBits;
  const network = (ip.value >> hostBits) << hostBits;
  return {
    family: ip.family,
    prefix,
    network,
    size,
    text: `${formatIp({ family: ip.family, value: network })}/${prefix}`,
  };
}

export function cidrContains(cidr: Cidr, ip: Ip): boolean {
  return ip.family === cidr.family && ip.value >= cidr.network && ip.value < cidr.network + cidr.size;
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.network < b.network + b.size && b.network < a.network + a.size;
}

/** Offset of `ip` from the network address of `cidr` (exact, 128-bit for IPv6). */
export function offsetOf(cidr: Cidr, ip: Ip): bigint {
  if (!cidrContains(cidr, ip)) throw new InvalidAddressError(formatIp(ip), `outside ${cidr.text}`);
  return ip.value - cidr.network;
}

/** The address at `offset` from the network address of `cidr`. */
export function ipAt(cidr: Cidr, offset: bigint): Ip {
  if (offset < 0n || offset >= cidr.size) {
    throw new InvalidAddressError(String(offset), `offset outside ${cidr.text}`);
  }
  return { family: cidr.family, value: cidr.network + offset };
}
