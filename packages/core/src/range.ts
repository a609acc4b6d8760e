import { InvalidAddressError, InvalidRangeError } from "./errors.js";
import { type Cidr, cidrContains, cidrOf, type Family, formatIp, type Ip, ipAt, parseCidr, parseIp } from "./ip.js";

/** A range as written in Whereabouts' (and ipamkit's) IPAM config. */
export interface RangeSpec {
  /** A CIDR (`10.0.0.0/24`) or `first-last/prefix` (`10.0.0.10-10.0.0.20/24`). */
  range: string;
  /** First address handed out (inclusive). */
  range_start?: string;
  /** Last address handed out (inclusive). */
  range_end?: string;
  /** CIDRs or bare IPs that are never handed out. */
  exclude?: readonly string[];
  /** Gateway of this range; never handed out. */
  gateway?: string;
}

/** An inclusive interval of offsets from the range's network address. */
export interface OffsetInterval {
  readonly from: bigint;
  readonly to: bigint;
}

/**
 * A canonicalised, validated range. Immutable. All bounds are offsets from `cidr.network`.
 * Usable offsets are `first..last` minus `blocked` (the excludes and the gateway, merged and sorted).
 */
export interface Range {
  readonly cidr: Cidr;
  readonly family: Family;
  readonly first: bigint;
  readonly last: bigint;
  readonly gateway: Ip | undefined;
  /** Excluded offsets within first..last (excludes and gateway), sorted and merged. */
  readonly blocked: readonly OffsetInterval[];
  /** Number of addresses that can be handed out. */
  readonly capacity: bigint;
  /** The canonical spec this range was built from (CIDR form, canonical addresses). */
  readonly spec: Readonly<RangeSpec>;
}

function parseIn(key: string, value: string): Ip {
  try {
    return parseIp(value);
  } catch (error) {
    if (error instanceof InvalidAddressError) throw new InvalidRangeError(key, value, "not an IP address");
    throw error;
  }
}

function parseCidrIn(key: string, value: string): Cidr {
  try {
    return parseCidr(value);
  } catch (error) {
    if (error instanceof InvalidAddressError) throw new InvalidRangeError(key, value, "not a CIDR");
    throw error;
  }
}

function splitRange(spec: RangeSpec): { cidr: Cidr; start?: Ip; end?: Ip } {
  const text = spec.range.trim();
  const dash = text.indexOf("-");
  if (dash < 0) return { cidr: parseCidrIn("range", text) };
  // `first-last/prefix`: the part after '-' is a CIDR whose address becomes the range end.
  const start = parseIn("range", text.slice(0, dash));
  const tail = text.slice(dash + 1);
  const slash = tail.indexOf("/");
  if (slash < 0) throw new InvalidRangeError("range", spec.range, "expected first-last/prefix");
  const end = parseIn("range", tail.slice(0, slash));
  const cidr = parseCidrIn("range", tail);
  if (start.family !== cidr.family) throw new InvalidRangeError("range", spec.range, "mixed address families");
  if (!cidrContains(cidr, start)) throw new InvalidRangeError("range", spec.range, "first address is outside the CIDR");
  return { cidr, start, end };
}

function boundFromSpec(key: string, value: string | undefined, cidr: Cidr, inline: Ip | undefined): Ip | undefined {
  if (value === undefined || value === "") return inline;
  const ip = parseIn(key, value);
  if (ip.family !== cidr.family) throw new InvalidRangeError(key, value, `mixed address families with range ${cidr.text}`);
  if (inline !== undefined && inline.value !== ip.value) {
    throw new InvalidRangeError(key, value, `conflicts with ${formatIp(inline)} given in range`);
  }
  return ip;
}

function mergeIntervals(intervals: OffsetInterval[]): OffsetInterval[] {
  const sorted = [...intervals].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
  const merged: OffsetInterval[] = [];
  for (const interval of sorted) {
    const prev = merged[merged.length - 1];
    if (prev !== undefined && interval.from <= prev.to + 1n) {
      if (interval.to > prev.to) merged[merged.length - 1] = { from: prev.from, to: interval.to };
    } else {
      merged.push(interval);
    }
  }
  return merged;
}

function parseExclude(value: string, cidr: Cidr): OffsetInterval {
  const exclude = value.includes("/") ? parseCidrIn("exclude", value) : cidrOf(parseIn("exclude", value), cidr.family === 4 ? 32 : 128);
  if (exclude.family !== cidr.family) throw new InvalidRangeError("exclude", value, `mixed address families with range ${cidr.text}`);
  const from = exclude.network > cidr.network ? exclude.network : cidr.network;
  const endExclusive =
    exclude.network + exclude.size < cidr.network + cidr.size ? exclude.network + exclude.size : cidr.network + cidr.size;
  if (from >= endExclusive) throw new InvalidRangeError("exclude", value, `outside range ${cidr.text}`);
  return { from: from - cidr.network, to: endExclusive - 1n - cidr.network };
}

/**
 * The shortest prefix a range may have, IPv4 and IPv6 alike: `10.0.0.0/8` and `fd00::/8` are
 * accepted; `0.0.0.0/0`, `::/0` and anything up to /7 are refused (they would hand out `::1/0`,
 * addresses of loopback, multicast and other reserved blocks, with a default-route prefix).
 */
export const MIN_RANGE_PREFIX = 8;

/**
 * Validates and canonicalises a range once. Rejects, naming the key and value: a prefix shorter
 * than {@link MIN_RANGE_PREFIX}, malformed addresses,
 * out-of-range `range_start`/`range_end` (Whereabouts silently ignores them), start after end,
 * excludes outside the range, mixed families, a gateway outside the range, and ranges with no
 * usable address. The network address and the last address (IPv4 broadcast; for IPv6 the
 * all-ones address, as Whereabouts skips it) are never handed out; nor is the gateway.
 */
export function parseRange(spec: RangeSpec): Range {
  if (typeof spec.range !== "string" || spec.range.trim() === "") {
    throw new InvalidRangeError("range", String(spec.range), "a range is required");
  }
  const { cidr, start: inlineStart, end: inlineEnd } = splitRange(spec);
  if (cidr.prefix < MIN_RANGE_PREFIX) {
    throw new InvalidRangeError(
      "range",
      spec.range,
      `prefix /${cidr.prefix} is shorter than /${MIN_RANGE_PREFIX}: a range that wide is a default route or spans reserved blocks (it would hand out ${formatIp(ipAt(cidr, 1n))}/${cidr.prefix})`,
    );
  }
  if (cidr.size < 4n) throw new InvalidRangeError("range", spec.range, "prefix too long: no usable address (/31, /32, /127, /128)");
  const usableFirst = 1n;
  const usableLast = cidr.size - 2n;

  const startIp = boundFromSpec("range_start", spec.range_start, cidr, inlineStart);
  const endIp = boundFromSpec("range_end", spec.range_end, cidr, inlineEnd);
  let first = usableFirst;
  let last = usableLast;
  if (startIp !== undefined) {
    const offset = startIp.value - cidr.network;
    if (offset < usableFirst || offset > usableLast) {
      throw new InvalidRangeError("range_start", formatIp(startIp), `outside the usable span of ${cidr.text}`);
    }
    first = offset;
  }
  if (endIp !== undefined) {
    const offset = endIp.value - cidr.network;
    if (offset < usableFirst || offset > usableLast) {
      throw new InvalidRangeError("range_end", formatIp(endIp), `outside the usable span of ${cidr.text}`);
    }
    last = offset;
  }
  if (first > last) {
    throw new InvalidRangeError("range_end", formatIp(ipAt(cidr, last)), `before range_start ${formatIp(ipAt(cidr, first))}`);
  }

  const blockedRaw = (spec.exclude ?? []).map((value) => parseExclude(value, cidr));
  let gateway: Ip | undefined;
  if (spec.gateway !== undefined && spec.gateway !== "") {
    gateway = parseIn("gateway", spec.gateway);
    if (gateway.family !== cidr.family)
      throw new InvalidRangeError("gateway", spec.gateway, `mixed address families with range ${cidr.text}`);
    const offset = gateway.value - cidr.network;
    if (offset < usableFirst || offset > usableLast) {
      throw new InvalidRangeError("gateway", spec.gateway, `not a usable address of ${cidr.text}`);
    }
    blockedRaw.push({ from: offset, to: offset });
  }
  const blocked = mergeIntervals(
    blockedRaw
      .filter((b) => b.to >= first && b.from <= last)
      .map((b) => ({ from: b.from < first ? first : b.from, to: b.to > last ? last : b.to })),
  );
  const blockedCount = blocked.reduce((sum, b) => sum + (b.to - b.from + 1n), 0n);
  const capacity = last - first + 1n - blockedCount;
  if (capacity <= 0n) throw new InvalidRangeError("range", spec.range, "no usable address left after exclude and gateway");

  const canonical: RangeSpec = { range: cidr.text };
  if (first !== usableFirst) canonical.range_start = formatIp(ipAt(cidr, first));
  if (last !== usableLast) canonical.range_end = formatIp(ipAt(cidr, last));
  if (spec.exclude !== undefined && spec.exclude.length > 0) {
    canonical.exclude = spec.exclude.map((e) => (e.includes("/") ? parseCidr(e).text : formatIp(parseIp(e))));
  }
  if (gateway !== undefined) canonical.gateway = formatIp(gateway);

  return Object.freeze({
    cidr,
    family: cidr.family,
    first,
    last,
    gateway,
    blocked: Object.freeze(blocked),
    capacity,
    spec: Object.freeze(canonical),
  });
}

/** The blocked interval containing `offset`, if any (binary search). */
export function blockedAt(range: Range, offset: bigint): OffsetInterval | undefined {
  let lo = 0;
  let hi = range.blocked.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const b = range.blocked[mid] as OffsetInterval;
    if (offset < b.from) hi = mid - 1;
    else if (offset > b.to) lo = mid + 1;
    else return b;
  }
  return undefined;
}

/** True when `offset` may be handed out: inside first..last and not excluded or the gateway. */
export function isAssignable(range: Range, offset: bigint): boolean {
  return offset >= range.first && offset <= range.last && blockedAt(range, offset) === undefined;
}
