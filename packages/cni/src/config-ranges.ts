import {
  type Family,
  InvalidAddressError,
  InvalidRangeError,
  type Ip,
  parseCidr,
  parseIp,
  parseRange,
  type Range,
  type RangeSpec,
} from "@ipamkit/core";
import { type ConfigError, configError, formatValue } from "./config-errors.js";
import type { IpamInput } from "./config-schema.js";

/** Where a key came from, for messages: undefined (inline) or the flat-file path. */
export type SourceOf = (ipamKey: string) => string | undefined;

interface Entry {
  /** Key prefix of this entry: `ipam.` for the top-level range, `ipam.ipRanges[i].` otherwise. */
  prefix: string;
  /** Where a key of this entry (`range`, `range_start`, …) came from. */
  sourceFor: SourceOf;
  /** Where a top-level key (`gateway`) came from. */
  rootSource: SourceOf;
  spec: RangeSpec;
  gateway: string | undefined;
}

function present(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

function entriesOf(ipam: IpamInput, sourceOf: SourceOf): Entry[] {
  const entries: Entry[] = [];
  if (present(ipam.range)) {
    const spec: RangeSpec = { range: ipam.range };
    if (ipam.range_start !== undefined) spec.range_start = ipam.range_start;
    if (ipam.range_end !== undefined) spec.range_end = ipam.range_end;
    if (ipam.exclude !== undefined) spec.exclude = ipam.exclude;
    entries.push({ prefix: "ipam.", sourceFor: sourceOf, rootSource: sourceOf, spec, gateway: undefined });
  } else {
    // Bounds without a range would be dropped; refuse instead.
    for (const key of ["range_start", "range_end"] as const) {
      if (present(ipam[key])) {
        throw configError(7, `ipam.${key}`, ipam[key], "set without ipam.range", { source: sourceOf(key) });
      }
    }
    if (ipam.exclude !== undefined && ipam.exclude.length > 0) {
      throw configError(7, "ipam.exclude", ipam.exclude, "set without ipam.range (each ipRanges entry has its own exclude)", {
        source: sourceOf("exclude"),
      });
    }
  }
  (ipam.ipRanges ?? []).forEach((entry, index) => {
    const spec: RangeSpec = { range: entry.range };
    if (entry.range_start !== undefined) spec.range_start = entry.range_start;
    if (entry.range_end !== undefined) spec.range_end = entry.range_end;
    if (entry.exclude !== undefined) spec.exclude = entry.exclude;
    entries.push({
      prefix: `ipam.ipRanges[${index}].`,
      sourceFor: () => sourceOf("ipRanges"),
      rootSource: sourceOf,
      spec,
      gateway: present(entry.gateway) ? entry.gateway : undefined,
    });
  });
  return entries;
}

/** Core's message is `… invalid <key> <json value>: <reason>`; keep only the reason. */
function reasonOf(error: InvalidRangeError): string {
  const marker = `invalid ${error.key} ${JSON.stringify(error.value)}: `;
  const at = error.message.indexOf(marker);
  return at < 0 ? error.message : error.message.slice(at + marker.length);
}

/** Maps core's range error onto the user's key path and value. */
function rangeError(error: InvalidRangeError, entry: Entry, gatewayKey: string, gatewayHint: string): ConfigError {
  const reason = reasonOf(error);
  const source = error.key === "gateway" && gatewayKey === "ipam.gateway" ? entry.rootSource("gateway") : entry.sourceFor(error.key);
  const { spec, prefix } = entry;
  switch (error.key) {
    case "range_start":
    case "range_end": {
      const own = spec[error.key];
      if (present(own)) return configError(7, `${prefix}${error.key}`, own, reason, { source, cause: error });
      // The bound came from a `first-last/prefix` range.
      return configError(7, `${prefix}range`, spec.range, `${error.key} ${JSON.stringify(error.value)} ${reason}`, {
        source,
        cause: error,
      });
    }
    case "exclude": {
      const index = (spec.exclude ?? []).indexOf(error.value);
      const key = index < 0 ? `${prefix}exclude` : `${prefix}exclude[${index}]`;
      return configError(7, key, error.value, reason, { source, cause: error });
    }
    case "gateway":
      return configError(7, gatewayKey, error.value, `${reason}${gatewayHint}`, { source, cause: error });
    default:
      return configError(7, `${prefix}range`, spec.range, reason, { source, cause: error });
  }
}

function parseEntry(entry: Entry, gatewayKey: string, gateway?: string, gatewayHint = ""): Range {
  try {
    return parseRange(gateway === undefined ? entry.spec : { ...entry.spec, gateway });
  } catch (error) {
    if (error instanceof InvalidRangeError) throw rangeError(error, entry, gatewayKey, gatewayHint);
    throw error;
  }
}

function familyName(family: Family): string {
  return family === 4 ? "IPv4" : "IPv6";
}

/**
 * Builds the validated range list: `range` (with the top-level `range_start`, `range_end`, `exclude`)
 * first, then `ipRanges` in order. A per-entry `gateway` wins; the top-level `gateway` goes to every
 * range of its own family that has none. Every range is checked by core `parseRange`; the result
 * holds the parsed ranges, whose `spec` is canonical (`parseRange` accepts it again unchanged).
 */
export function buildRanges(ipam: IpamInput, sourceOf: SourceOf, warnings: string[]): Range[] {
  const entries = entriesOf(ipam, sourceOf);
  if (entries.length === 0) {
    throw configError(7, "ipam.range", ipam.range, "at least one range is required (ipam.range or ipam.ipRanges)", {
      source: sourceOf("range"),
    });
  }
  let topGateway: Ip | undefined;
  if (present(ipam.gateway)) {
    try {
      topGateway = parseIp(ipam.gateway);
    } catch (error) {
      if (!(error instanceof InvalidAddressError)) throw error;
      throw configError(7, "ipam.gateway", ipam.gateway, "not an IP address", { source: sourceOf("gateway"), cause: error });
    }
  }
  let attached = 0;
  let ofGatewayFamily = 0;
  const ranges = entries.map((entry) => {
    const plain = parseEntry(entry, `${entry.prefix}gateway`);
    const matches = topGateway !== undefined && plain.family === topGateway.family;
    if (matches) ofGatewayFamily += 1;
    if (entry.gateway !== undefined) return parseEntry(entry, `${entry.prefix}gateway`, entry.gateway);
    if (!matches) return plain;
    attached += 1;
    const hint = `; the top-level gateway applies to every ${familyName(plain.family)} range without its own, set ${entry.prefix}gateway instead`;
    return parseEntry(entry, "ipam.gateway", ipam.gateway, entry.prefix === "ipam." ? "" : hint);
  });
  for (const [i, entry] of entries.entries()) warnHostBits(entry, ranges[i] as Range, warnings);
  if (topGateway !== undefined && attached === 0) {
    const family = familyName(topGateway.family);
    if (ofGatewayFamily === 0) {
      throw configError(7, "ipam.gateway", ipam.gateway, `no ${family} range to attach it to`, { source: sourceOf("gateway") });
    }
    warnings.push(`ipam.gateway is unused: every ${family} range sets its own gateway`);
  }
  return ranges;
}

/** The address part of `a.b.c.d/p`, when it is an address; undefined for other forms. */
function addressOf(cidrText: string): Ip | undefined {
  const slash = cidrText.indexOf("/");
  if (slash < 0 || cidrText.includes("-")) return undefined; // `first-last/prefix`: the address is the range end
  try {
    return parseIp(cidrText.slice(0, slash));
  } catch {
    return undefined;
  }
}

/**
 * No setting is silently changed: a range or exclude CIDR with host bits set (`10.0.0.77/24`) is
 * accepted, as Whereabouts does, and taken as its network (`10.0.0.0/24`); a warning says so.
 */
function warnHostBits(entry: Entry, range: Range, warnings: string[]): void {
  const say = (key: string, value: string, taken: string) =>
    warnings.push(`${key} ${formatValue(key, value)} has host bits set: taken as ${taken}`);
  const address = addressOf(entry.spec.range.trim());
  if (address !== undefined && address.value !== range.cidr.network) say(`${entry.prefix}range`, entry.spec.range, range.cidr.text);
  (entry.spec.exclude ?? []).forEach((value, index) => {
    const own = addressOf(value.trim());
    if (own === undefined) return;
    const canonical = parseCidr(value.trim());
    if (own.value !== canonical.network) say(`${entry.prefix}exclude[${index}]`, value, canonical.text);
  });
}

/** A range's canonical spec as a plain copy (the config's `ranges`). */
export function specOf(range: Range): RangeSpec {
  const spec = { ...range.spec };
  return spec.exclude === undefined ? spec : { ...spec, exclude: [...spec.exclude] };
}
