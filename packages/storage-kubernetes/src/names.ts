import type { ClaimRef, PoolRef } from "@ipamkit/core";

/**
 * Whereabouts' object names, byte for byte (pkg/storage/kubernetes: `NormalizeRange`,
 * `GetOverlappingRangeIPReservationName`), so ipamkit finds the objects Whereabouts wrote.
 * The mapping is lossy (`-` stands for `:` and `/`), so nothing is ever parsed back out of a
 * name except where DESIGN.md says how the ambiguity is resolved.
 */

/** Whereabouts' `normalize`: a trailing ':' gets a '0', then every ':' and '/' becomes '-'. */
export function normalizeRange(text: string): string {
  return (text.endsWith(":") ? `${text}0` : text).replace(/[:/]/g, "-");
}

const prefixed = (network: string, name: string): string => (network === "" ? name : `${network}-${name}`);

/**
 * The IPPool name: `normalize(range)`, prefixed `<network_name>-` for a named network; a node's
 * slice pool (`ref.node`) is `<node>-normalize(slice)`, or `<network_name>-<node>-normalize(slice)`
 * (Whereabouts' `IPPoolName` with a NodeName).
 */
export function ipPoolName(ref: PoolRef): string {
  const range = normalizeRange(ref.cidr);
  return prefixed(ref.network, ref.node === undefined ? range : `${ref.node}-${range}`);
}

/** The OverlappingRangeIPReservation name: the canonical address with ':' → '-' (a trailing ':' gets a '0'). */
export function reservationName(ref: ClaimRef): string {
  const address = ref.address.endsWith(":") ? `${ref.address}0` : ref.address;
  return prefixed(ref.network, address.replace(/:/g, "-"));
}

/**
 * The network an IPPool belongs to, from its name and its (canonical) `spec.range`: "" when the
 * name is exactly `normalize(range)`, `X` when it is `X-normalize(range)`, undefined otherwise.
 * The range comes from the object's spec, never from its name.
 */
export function networkOfPool(name: string, cidr: string): string | undefined {
  const suffix = normalizeRange(cidr);
  if (name === suffix) return "";
  if (name.length > suffix.length + 1 && name.endsWith(`-${suffix}`)) return name.slice(0, -suffix.length - 1);
  return undefined;
}

/**
 * Candidate addresses of a Whereabouts-written reservation name within a network (names carry no
 * spec field with the address). IPv4 names are unambiguous; for IPv6, '-' is turned back into ':'.
 * The caller canonicalises the candidate and keeps it only if it re-encodes to the same name and
 * lies in a pool of the network.
 */
export function addressFromReservationName(name: string, network: string): string | undefined {
  let rest = name;
  if (network !== "") {
    if (!name.startsWith(`${network}-`)) return undefined;
    rest = name.slice(network.length + 1);
  }
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(rest)) return rest;
  if (!/^[0-9a-f-]+$/.test(rest) || !rest.includes("-")) return undefined;
  // A trailing "::" was written as "--0"; "…::0" parses to the same address.
  return rest.replace(/-/g, ":");
}
