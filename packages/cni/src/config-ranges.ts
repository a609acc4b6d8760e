import {
  type Cidr,
  cidrContains,
  type Family,
  formatIp,
  InvalidRangeError,
  type Ip,
  ipAt,
  MIN_RANGE_PREFIX,
  parseRange,
  type Range,
  type RangeSpec,
} from "@ipamkit/core";
import { configError, formatValue } from "./config-errors.js";
import type { IpamInput } from "./config-schema.js";
import { parseCidrSloppy, parseCidrStrict, parseIpSloppy, parseIpStrict } from "./config-sloppy.js";

/** Where a key came from, for messages: undefined (inline) or the flat-file path. */
export type SourceOf = (ipamKey: string) => string | undefined;

/** One range as written: the top-level `range` (with its keys) or an `ipRanges` entry. */
interface Entry {
  /** Key prefix of this entry: `ipam.` for the top-level range, `ipam.ipRanges[i].` otherwise. */
  prefix: string;
  /** Where a key of this entry came from. */
  sourceFor: SourceOf;
  range: string;
  rangeStart: string | undefined;
  rangeEnd: string | undefined;
  exclude: readonly string[];
  /** The top-level bounds are read sloppily and ignored when unreadable; an entry's strictly (Go's net.IP). */
  topLevel: boolean;
  gateway: string | undefined;
}

/** The ranges of a config: core ranges (what is handed out) and each one's result gateway. */
export interface BuiltRanges {
  ranges: Range[];
  /** The gateway each range's result carries (it may lie outside the range, as Whereabouts allows). */
  gateways: (string | undefined)[];
}

function present(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

function entriesOf(ipam: IpamInput, sourceOf: SourceOf, warnings: string[]): Entry[] {
  const entries: Entry[] = [];
  if (present(ipam.range)) {
    entries.push({
      prefix: "ipam.",
      sourceFor: sourceOf,
      range: ipam.range,
      rangeStart: ipam.range_start,
      rangeEnd: ipam.range_end,
      exclude: ipam.exclude ?? [],
      topLevel: true,
      gateway: undefined,
    });
  } else {
    // Whereabouts drops them without a range; so does ipamkit, saying so.
    for (const key of ["range_start", "range_end"] as const) {
      if (present(ipam[key])) warnings.push(`ipam.${key} ${formatValue(key, ipam[key])} is ignored: set without ipam.range`);
    }
    if (ipam.exclude !== undefined && ipam.exclude.length > 0) {
      warnings.push("ipam.exclude is ignored: set without ipam.range (each ipRanges entry has its own exclude)");
    }
  }
  (ipam.ipRanges ?? []).forEach((entry, index) => {
    entries.push({
      prefix: `ipam.ipRanges[${index}].`,
      sourceFor: () => sourceOf("ipRanges"),
      range: entry.range,
      rangeStart: entry.range_start,
      rangeEnd: entry.range_end,
      exclude: entry.exclude ?? [],
      topLevel: false,
      gateway: present(entry.gateway) ? entry.gateway : undefined,
    });
  });
  return entries;
}

interface Parsed {
  cidr: Cidr;
  /** The bounds as written (range text or keys), before clamping. */
  start: Ip | undefined;
  end: Ip | undefined;
}

/** `range` (a CIDR or `first-last/prefix`) and the entry's bounds, read as Whereabouts reads them. */
function parseBounds(entry: Entry, warnings: string[]): Parsed {
  const { prefix, range } = entry;
  const source = { source: entry.sourceFor("range") };
  // not trimmed: Go's ParseCIDR refuses " 10.0.0.0/24", and so does ipamkit
  const text = range;
  const dash = text.indexOf("-");
  if (dash >= 0) {
    const start = parseIpSloppy(text.slice(0, dash));
    if (start === undefined) throw configError(7, `${prefix}range`, range, "the address before '-' is not an IP address", source);
    const tail = parseCidrSloppy(text.slice(dash + 1));
    if (tail === undefined) {
      throw configError(7, `${prefix}range`, range, "the part after '-' must be address/prefix (e.g. 10.0.0.10-10.0.0.20/24)", source);
    }
    if (!cidrContains(tail.cidr, start))
      throw configError(7, `${prefix}range`, range, `first address is outside ${tail.cidr.text}`, source);
    for (const key of ["range_start", "range_end"] as const) {
      const own = key === "range_start" ? entry.rangeStart : entry.rangeEnd;
      if (present(own))
        warnings.push(`${prefix}${key} ${formatValue(key, own)} is ignored: ${prefix}range gives the bounds, as in Whereabouts`);
    }
    return { cidr: tail.cidr, start, end: tail.ip };
  }
  const parsed = parseCidrSloppy(text);
  if (parsed === undefined) throw configError(7, `${prefix}range`, range, "not a CIDR (address/prefix, e.g. 10.0.0.0/24)", source);
  return { cidr: parsed.cidr, start: bound(entry, "range_start", warnings), end: bound(entry, "range_end", warnings) };
}

/** An explicit `range_start`/`range_end`: sloppy and ignored when unreadable at the top level (Whereabouts' sanitizeIP), strict in an entry. */
function bound(entry: Entry, key: "range_start" | "range_end", warnings: string[]): Ip | undefined {
  const value = key === "range_start" ? entry.rangeStart : entry.rangeEnd;
  if (!present(value)) return undefined;
  const ip = entry.topLevel ? parseIpSloppy(value) : parseIpStrict(value);
  if (ip !== undefined) return ip;
  if (entry.topLevel) {
    warnings.push(`${entry.prefix}${key} ${formatValue(key, value)} is not an IP address: ignored, as Whereabouts ignores it`);
    return undefined;
  }
  throw configError(7, `${entry.prefix}${key}`, value, "not an IP address (e.g. 10.0.0.10; no leading zeros)", {
    source: entry.sourceFor(key),
  });
}

/**
 * Whereabouts' GetIPRange: a bound counts only inside the usable span (range_end also not below
 * the start); otherwise it is ignored. ipamkit does the same and warns.
 */
function clamp(entry: Entry, parsed: Parsed, warnings: string[]): { first: bigint; last: bigint } {
  const { cidr } = parsed;
  let first = 1n;
  let last = cidr.size - 2n;
  const offset = (ip: Ip) => (ip.family === cidr.family ? ip.value - cidr.network : -1n);
  const ignored = (key: string, ip: Ip, why: string) =>
    warnings.push(`${entry.prefix}${key} ${formatIp(ip)} is ignored: ${why}, as Whereabouts ignores it`);
  if (parsed.start !== undefined) {
    const at = offset(parsed.start);
    if (at >= first && at <= last) first = at;
    // the network address itself is Whereabouts' own default start: no news
    else if (at !== 0n) ignored("range_start", parsed.start, `outside the usable span of ${cidr.text}`);
  }
  if (parsed.end !== undefined) {
    const at = offset(parsed.end);
    if (at >= first && at <= last) last = at;
    else ignored("range_end", parsed.end, at >= 1n && at < first ? "below range_start" : `outside the usable span of ${cidr.text}`);
  }
  return { first, last };
}

/** `exclude`: strict CIDRs or addresses (an unreadable one fails every Whereabouts ADD); entries that miss the range are dropped. */
function excludesOf(entry: Entry, cidr: Cidr, warnings: string[]): string[] {
  const out: string[] = [];
  entry.exclude.forEach((value, index) => {
    const key = `${entry.prefix}exclude[${index}]`;
    const text = typeof value === "string" ? value.trim() : value;
    const asCidr = parseCidrStrict(text);
    const ip = asCidr === undefined ? parseIpStrict(text) : undefined;
    if (asCidr === undefined && ip === undefined) {
      throw configError(7, key, value, "not a CIDR or an IP address (e.g. 10.0.0.0/28 or 10.0.0.5; no leading zeros)", {
        source: entry.sourceFor("exclude"),
      });
    }
    const canonical = asCidr?.text ?? formatIp(ip as Ip);
    const from = asCidr?.network ?? (ip as Ip).value;
    const size = asCidr?.size ?? 1n;
    const family = asCidr?.family ?? (ip as Ip).family;
    if (family !== cidr.family || from + size <= cidr.network || from >= cidr.network + cidr.size) {
      warnings.push(`${key} ${formatValue(key, value)} has no effect: outside range ${cidr.text}`);
      return;
    }
    const written = asCidr === undefined ? undefined : parseIpStrict(text.slice(0, text.indexOf("/")));
    if (written !== undefined && written.value !== from)
      warnings.push(`${key} ${formatValue(key, value)} has host bits set: taken as ${canonical}`);
    out.push(canonical);
  });
  return out;
}

function familyName(family: Family): string {
  return family === 4 ? "IPv4" : "IPv6";
}

/** The top-level `gateway` (sloppy, as Whereabouts parses it; unreadable fails there too). */
function topGatewayOf(ipam: IpamInput, sourceOf: SourceOf): Ip | undefined {
  if (!present(ipam.gateway)) return undefined;
  const ip = parseIpSloppy(ipam.gateway.trim());
  if (ip === undefined)
    throw configError(7, "ipam.gateway", ipam.gateway, "not an IP address (e.g. 10.0.0.1)", { source: sourceOf("gateway") });
  return ip;
}

/** Core's range for the clamped spec; only ipamkit's own refusals (documented deliberate differences) remain. */
function coreRange(entry: Entry, spec: RangeSpec): Range {
  try {
    return parseRange(spec);
  } catch (error) {
    if (!(error instanceof InvalidRangeError)) throw error;
    throw configError(7, `${entry.prefix}range`, entry.range, reasonOf(error), { source: entry.sourceFor("range"), cause: error });
  }
}

/** Core's message is `… invalid <key> <json value>: <reason>`; keep only the reason. */
function reasonOf(error: InvalidRangeError): string {
  const marker = `invalid ${error.key} ${JSON.stringify(error.value)}: `;
  const at = error.message.indexOf(marker);
  return at < 0 ? error.message : error.message.slice(at + marker.length);
}

/**
 * Builds the range list as Whereabouts reads it: `range` (with the top-level `range_start`,
 * `range_end`, `exclude`) first, then `ipRanges` in order; bounds outside the usable span and
 * excludes outside the range ignored (with a warning each). A per-entry `gateway` wins; the
 * top-level one goes to every range of its own family. A gateway inside the usable span is never
 * handed out (ipamkit's deliberate difference); one outside the range is only reported. Refused:
 * ranges with no usable address (/31, /32, /127, /128, or everything excluded), prefixes shorter
 * than /8, unreadable `range`, `exclude` or `gateway`.
 */
export function buildRanges(ipam: IpamInput, sourceOf: SourceOf, warnings: string[]): BuiltRanges {
  const entries = entriesOf(ipam, sourceOf, warnings);
  if (entries.length === 0) {
    throw configError(7, "ipam.range", ipam.range, "at least one range is required (ipam.range or ipam.ipRanges)", {
      source: sourceOf("range"),
    });
  }
  const topGateway = topGatewayOf(ipam, sourceOf);
  let attached = 0;
  const ranges: Range[] = [];
  const gateways: (string | undefined)[] = [];
  for (const entry of entries) {
    const parsed = parseBounds(entry, warnings);
    const { cidr } = parsed;
    const source = { source: entry.sourceFor("range") };
    if (cidr.prefix < MIN_RANGE_PREFIX) {
      throw configError(
        7,
        `${entry.prefix}range`,
        entry.range,
        `prefix /${cidr.prefix} is shorter than /${MIN_RANGE_PREFIX}; use /${MIN_RANGE_PREFIX} or longer`,
        source,
      );
    }
    if (cidr.size < 4n) {
      throw configError(
        7,
        `${entry.prefix}range`,
        entry.range,
        `/${cidr.prefix} has no usable address (Whereabouts fails every ADD on it); use a /${cidr.family === 4 ? 30 : 126} or wider`,
        source,
      );
    }
    warnHostBits(entry, parsed, warnings);
    const { first, last } = clamp(entry, parsed, warnings);
    const spec: RangeSpec = { range: cidr.text };
    if (first !== 1n) spec.range_start = formatIp(ipAt(cidr, first));
    if (last !== cidr.size - 2n) spec.range_end = formatIp(ipAt(cidr, last));
    const exclude = excludesOf(entry, cidr, warnings);
    if (exclude.length > 0) spec.exclude = exclude;
    let gateway: Ip | undefined;
    if (entry.gateway !== undefined) {
      gateway = parseIpSloppy(entry.gateway.trim());
      if (gateway === undefined || gateway.family !== cidr.family) {
        const why = gateway === undefined ? "not an IP address" : `not an ${familyName(cidr.family)} address`;
        throw configError(7, `${entry.prefix}gateway`, entry.gateway, why, { source: entry.sourceFor("gateway") });
      }
    } else if (topGateway !== undefined && topGateway.family === cidr.family) {
      gateway = topGateway;
      attached += 1;
    }
    if (gateway !== undefined && cidrContains(cidr, gateway)) {
      const at = gateway.value - cidr.network;
      // never handed out (Whereabouts would hand it to a pod)
      if (at >= 1n && at <= cidr.size - 2n) spec.gateway = formatIp(gateway);
    }
    ranges.push(coreRange(entry, spec));
    gateways.push(gateway === undefined ? undefined : formatIp(gateway));
  }
  if (topGateway !== undefined && attached === 0) {
    const family = familyName(topGateway.family);
    const why = ranges.some((r) => r.family === topGateway.family)
      ? `every ${family} range sets its own gateway`
      : `no ${family} range to attach it to (Whereabouts would put it on addresses of the other family)`;
    warnings.push(`ipam.gateway ${formatValue("gateway", ipam.gateway)} is unused: ${why}`);
  }
  return { ranges, gateways };
}

/** A `range` written with host bits (`10.0.0.77/24`) is taken as its network, as Whereabouts does; a warning says so. */
function warnHostBits(entry: Entry, parsed: Parsed, warnings: string[]): void {
  const text = entry.range;
  if (text.includes("-")) return; // `first-last/prefix`: the address is the range end
  const written = parseCidrSloppy(text);
  if (written !== undefined && written.ip.value !== parsed.cidr.network) {
    warnings.push(`${entry.prefix}range ${formatValue("range", entry.range)} has host bits set: taken as ${parsed.cidr.text}`);
  }
}

/** A range's canonical spec as a plain copy (the config's `ranges`). */
export function specOf(range: Range): RangeSpec {
  const spec = { ...range.spec };
  return spec.exclude === undefined ? spec : { ...spec, exclude: [...spec.exclude] };
}
