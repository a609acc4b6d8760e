import { familyBits, formatIp, type Ip, parseIp } from "@ipamkit/core";
import type { CniVersion, Dns, Route } from "./types.js";
import { compareVersions } from "./versions.js";

/** One address handed out by ADD: the address, the prefix length of its range and the range's gateway. */
export interface AssignedIp {
  address: Ip;
  prefix: number;
  gateway?: Ip;
}

/** One `ips[]` entry of an IPAM result (`version` only before 1.0.0). */
export interface ResultIp {
  version?: "4" | "6";
  address: string;
  gateway?: string;
}

/** The abbreviated IPAM result (no `interfaces`, no `ips[].interface`). */
export interface IpamResult {
  cniVersion: CniVersion;
  ips: ResultIp[];
  routes?: Route[];
  dns?: Dns;
}

/** One family's entry of a 0.1.0/0.2.0 result. */
export interface LegacyIpConfig {
  ip: string;
  gateway?: string;
  routes?: Route[];
}

/** The 0.1.0/0.2.0 result: one address per family, routes inside their family's entry, `dns` always present (Go's struct). */
export interface LegacyIpamResult {
  cniVersion: "0.1.0" | "0.2.0";
  ip4?: LegacyIpConfig;
  ip6?: LegacyIpConfig;
  dns: Dns;
}

/**
 * Builds the IPAM ADD result for the config's `cniVersion` (cni-contract §6):
 * - 0.1.0, 0.2.0: `ip4`/`ip6`, the first address of each family, each family's routes inside it
 *   (as libcni converts a current result; more than one address of a family is refused at load);
 * - 0.3.0, 0.3.1, 0.4.0: `ips[]` carry `version` ("4" or "6");
 * - 1.0.0 and later: no `ips[].version`;
 * - 1.1.0: routes keep `mtu`, `advmss`, `priority`, `table`, `scope`; older versions keep only `dst` and `gw`.
 * `routes` and `dns` are omitted when empty; `dns` keeps only non-empty fields (Go's `omitempty`).
 */
type ResultInput<V extends CniVersion> = { cniVersion: V; ips: AssignedIp[]; routes: Route[]; dns: Dns | undefined };
export function buildResult(input: ResultInput<Exclude<CniVersion, "0.1.0" | "0.2.0">>): IpamResult;
export function buildResult(input: ResultInput<CniVersion>): IpamResult | LegacyIpamResult;
export function buildResult(input: {
  cniVersion: CniVersion;
  ips: AssignedIp[];
  routes: Route[];
  dns: Dns | undefined;
}): IpamResult | LegacyIpamResult {
  const { cniVersion } = input;
  if (cniVersion === "0.1.0" || cniVersion === "0.2.0") return legacyResult(cniVersion, input);
  const withVersion = compareVersions(cniVersion, "1.0.0") < 0;
  const richRoutes = compareVersions(cniVersion, "1.1.0") >= 0;
  const result: IpamResult = { cniVersion, ips: input.ips.map((ip) => resultIp(ip, withVersion)) };
  const routes = input.routes.map((r) => resultRoute(r, richRoutes));
  if (routes.length > 0) result.routes = routes;
  const dns = resultDns(input.dns);
  if (dns !== undefined) result.dns = dns;
  return result;
}

function legacyResult(
  cniVersion: "0.1.0" | "0.2.0",
  input: { ips: AssignedIp[]; routes: Route[]; dns: Dns | undefined },
): LegacyIpamResult {
  const result: LegacyIpamResult = { cniVersion, dns: resultDns(input.dns) ?? {} };
  for (const ip of input.ips) {
    const slot = ip.address.family === 4 ? "ip4" : "ip6";
    if (result[slot] !== undefined) continue;
    const { address, gateway } = resultIp(ip, false);
    result[slot] = { ip: address, ...(gateway === undefined ? {} : { gateway }) };
  }
  for (const route of input.routes) {
    const slot = route.dst.includes(":") ? "ip6" : "ip4";
    const entry = result[slot];
    if (entry !== undefined) entry.routes = [...(entry.routes ?? []), resultRoute(route, false)];
  }
  return result;
}

/**
 * Reads the addresses of a `prevResult` (for CHECK) of any supported version: 0.3.x/0.4.0
 * (`ips[].version`, `ips[].interface`, `interfaces`) and 1.x (no `version`). Returns canonical
 * `ip/prefix` texts (host part kept) and canonical gateways. A result without `ips` has no addresses.
 * Throws a plain Error naming the offending field when the shape is wrong.
 */
export function parsePrevResult(prev: unknown): { address: string; gateway?: string }[] {
  if (!isRecord(prev)) throw new Error(`invalid prevResult: expected a JSON object, got ${describe(prev)}`);
  const ips = prev.ips;
  if (ips === undefined || ips === null) {
    if (prev.ip4 !== undefined || prev.ip6 !== undefined) {
      throw new Error("invalid prevResult: the pre-0.3.0 ip4/ip6 result shape is not supported");
    }
    return [];
  }
  if (!Array.isArray(ips)) throw new Error(`invalid prevResult: "ips" must be an array, got ${describe(ips)}`);
  return ips.map((entry: unknown, i) => {
    const where = `ips[${i}]`;
    if (!isRecord(entry)) throw new Error(`invalid prevResult: ${where} must be an object, got ${describe(entry)}`);
    const { address, gateway, version } = entry;
    if (typeof address !== "string") throw new Error(`invalid prevResult: ${where}.address must be a string, got ${describe(address)}`);
    const parsed = parseAddressWithPrefix(address, `${where}.address`);
    if (version !== undefined && version !== String(parsed.ip.family)) {
      throw new Error(`invalid prevResult: ${where}.version ${JSON.stringify(version)} does not match address ${JSON.stringify(address)}`);
    }
    const out: { address: string; gateway?: string } = { address: `${formatIp(parsed.ip)}/${parsed.prefix}` };
    if (gateway !== undefined && gateway !== null && gateway !== "") {
      if (typeof gateway !== "string") throw new Error(`invalid prevResult: ${where}.gateway must be a string, got ${describe(gateway)}`);
      const gw = parseIpOrThrow(gateway, `${where}.gateway`);
      if (gw.family !== parsed.ip.family) {
        throw new Error(
          `invalid prevResult: ${where}.gateway ${JSON.stringify(gateway)} is not of the family of ${JSON.stringify(address)}`,
        );
      }
      out.gateway = formatIp(gw);
    }
    return out;
  });
}

function resultIp(ip: AssignedIp, withVersion: boolean): ResultIp {
  const bits = familyBits(ip.address.family);
  if (!Number.isInteger(ip.prefix) || ip.prefix < 0 || ip.prefix > bits) {
    throw new Error(`prefix ${ip.prefix} is out of range for ${formatIp(ip.address)} (0..${bits})`);
  }
  if (ip.gateway !== undefined && ip.gateway.family !== ip.address.family) {
    throw new Error(`gateway ${formatIp(ip.gateway)} is not of the family of ${formatIp(ip.address)}`);
  }
  return {
    ...(withVersion ? { version: ip.address.family === 4 ? "4" : "6" } : {}),
    address: `${formatIp(ip.address)}/${ip.prefix}`,
    ...(ip.gateway === undefined ? {} : { gateway: formatIp(ip.gateway) }),
  };
}

const RICH_ROUTE_FIELDS = ["mtu", "advmss", "priority", "table", "scope"] as const;

function resultRoute(route: Route, rich: boolean): Route {
  const out: Route = { dst: route.dst };
  if (route.gw !== undefined && route.gw !== "") out.gw = route.gw;
  if (rich) {
    for (const field of RICH_ROUTE_FIELDS) {
      const value = route[field];
      if (value !== undefined) out[field] = value;
    }
  }
  return out;
}

function resultDns(dns: Dns | undefined): Dns | undefined {
  if (dns === undefined) return undefined;
  const out: Dns = {};
  if (dns.nameservers !== undefined && dns.nameservers.length > 0) out.nameservers = [...dns.nameservers];
  if (dns.domain !== undefined && dns.domain !== "") out.domain = dns.domain;
  if (dns.search !== undefined && dns.search.length > 0) out.search = [...dns.search];
  if (dns.options !== undefined && dns.options.length > 0) out.options = [...dns.options];
  return Object.keys(out).length > 0 ? out : undefined;
}

function parseAddressWithPrefix(text: string, where: string): { ip: Ip; prefix: number } {
  const slash = text.lastIndexOf("/");
  if (slash < 0) throw new Error(`invalid prevResult: ${where} ${JSON.stringify(text)} needs a /prefix`);
  const ip = parseIpOrThrow(text.slice(0, slash), where, text);
  const prefixText = text.slice(slash + 1);
  const bits = familyBits(ip.family);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) {
    throw new Error(`invalid prevResult: ${where} ${JSON.stringify(text)} has a prefix outside 0..${bits}`);
  }
  return { ip, prefix: Number(prefixText) };
}

function parseIpOrThrow(text: string, where: string, whole = text): Ip {
  try {
    return parseIp(text);
  } catch {
    throw new Error(`invalid prevResult: ${where} ${JSON.stringify(whole)} is not a valid IP address`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}
