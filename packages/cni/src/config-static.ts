import { formatIp } from "@ipamkit/core";
import { configError } from "./config-errors.js";
import type { SourceOf } from "./config-ranges.js";
import type { IpamInput } from "./config-schema.js";
import { parseCidrSloppy, parseIpSloppy } from "./config-sloppy.js";
import type { IpamConfig } from "./types.js";

/**
 * `addresses`: static addresses Whereabouts appends to every result (as the static IPAM plugin),
 * never reserved in a pool. Read with ParseCIDRSloppy as Whereabouts reads them; an unreadable one
 * fails there too. The host part is kept (`10.10.0.5/24`).
 */
export function staticAddressesOf(ipam: IpamInput, sourceOf: SourceOf): IpamConfig["staticAddresses"] {
  return (ipam.addresses ?? []).map((entry, index) => {
    const key = `ipam.addresses[${index}]`;
    const source = { source: sourceOf("addresses") };
    const parsed = parseCidrSloppy(entry.address.trim());
    if (parsed === undefined) throw configError(7, `${key}.address`, entry.address, "not address/prefix (e.g. 10.10.0.5/24)", source);
    const out: { address: string; gateway?: string } = { address: `${formatIp(parsed.ip)}/${parsed.cidr.prefix}` };
    if (entry.gateway !== undefined && entry.gateway !== "") {
      const gateway = parseIpSloppy(entry.gateway.trim());
      if (gateway === undefined || gateway.family !== parsed.ip.family) {
        throw configError(7, `${key}.gateway`, entry.gateway, `not an IPv${parsed.ip.family} address`, source);
      }
      out.gateway = formatIp(gateway);
    }
    return out;
  });
}

/** `dns.nameservers` that are not addresses (host names): copied into the result as Whereabouts does, with a warning. */
export function warnNameservers(ipam: IpamInput, warnings: string[]): void {
  ipam.dns?.nameservers?.forEach((name, index) => {
    if (parseIpSloppy(name.trim()) === undefined) {
      warnings.push(
        `ipam.dns.nameservers[${index}] ${JSON.stringify(name)} is not an IP address: passed on as Whereabouts does, but resolv.conf needs an address`,
      );
    }
  });
}
