import { formatValue } from "./config-errors.js";
import { isPlainObject } from "./config-flat.js";
import { addressSchema, dnsSchema, ipamSchema, kubernetesSchema, rangeEntrySchema, routeSchema } from "./config-schema.js";

// Whereabouts decodes its config with Go's encoding/json: a key matches a field case-insensitively
// (an exact match first), `null` leaves a field unset, and a key it has no field for is ignored.
// ipamkit reads the same documents the same way, but says so: each key read under another spelling
// and each key dropped gives one warning line (with the nearest accepted key), never an error.

/** The keys of one level of the IPAM config: Whereabouts' own (matched case-insensitively) and all accepted (exact). */
interface Level {
  whereabouts: readonly string[];
  /** Every key the schema of this level accepts (ipamkit's own keys match exactly only). */
  accepted: readonly string[];
  /** Levels below: a key holding an object, or an array of objects. */
  objects?: Readonly<Record<string, Level>>;
  arrays?: Readonly<Record<string, Level>>;
}

const keysOf = (schema: { _zod: { def: { shape: object } } }) => Object.keys(schema._zod.def.shape);

const RANGE_ENTRY: Level = { whereabouts: ["exclude", "range", "range_start", "range_end"], accepted: keysOf(rangeEntrySchema) };
// cnitypes.Route of CNI 1.1 (github.com/containernetworking/cni v1.3.0) and cnitypes.DNS
const ROUTE: Level = { whereabouts: ["dst", "gw", "mtu", "advmss", "priority", "table", "scope"], accepted: keysOf(routeSchema) };
const DNS: Level = { whereabouts: ["nameservers", "domain", "search", "options"], accepted: keysOf(dnsSchema) };
const KUBERNETES: Level = { whereabouts: ["kubeconfig", "k8s_api_root"], accepted: keysOf(kubernetesSchema) };
const ADDRESS: Level = { whereabouts: ["address", "gateway"], accepted: keysOf(addressSchema) };

/** Every `ipam` key: Whereabouts' IPAMConfig (pkg/types/types.go, v0.9) and the rest of ipamkit's schema. */
export const IPAM_LEVEL: Level = {
  whereabouts: [
    "type",
    "routes",
    "datastore",
    "addresses",
    "ipRanges",
    "node_slice_size",
    "exclude",
    "dns",
    "range",
    "range_start",
    "range_end",
    "gateway",
    "etcd_host",
    "etcd_username",
    "etcd_password",
    "etcd_key_file",
    "etcd_cert_file",
    "etcd_ca_cert_file",
    "leader_lease_duration",
    "leader_renew_deadline",
    "leader_retry_period",
    "log_file",
    "log_level",
    "reconciler_cron_expression",
    "enable_overlapping_ranges",
    "sleep_for_race",
    "kubernetes",
    "configuration_path",
    "network_name",
  ],
  accepted: keysOf(ipamSchema),
  objects: { kubernetes: KUBERNETES, dns: DNS },
  arrays: { ipRanges: RANGE_ENTRY, routes: ROUTE, addresses: ADDRESS },
};

/** Levenshtein distance (small strings: config keys). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The accepted key nearest to `key` (case-insensitive), when it is near enough to be a likely typo. */
export function nearestKey(key: string, accepted: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of accepted) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, not assignment: a "__proto__" key from JSON must stay a plain own key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function normalizeLevel(raw: Record<string, unknown>, level: Level, path: string, warnings: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const exact = new Set(level.accepted);
  const folded = new Map(level.whereabouts.map((key) => [key.toLowerCase(), key]));
  for (const [key, value] of Object.entries(raw)) {
    const canonical = exact.has(key) ? key : folded.get(key.toLowerCase());
    if (canonical === undefined) {
      const near = nearestKey(key, [...exact]);
      const hint = near === undefined ? "" : ` (did you mean ${path}${near}?)`;
      warnings.push(
        `${path}${key} ${formatValue(key, value)} is not a Whereabouts or ipamkit key: ignored, as Whereabouts ignores it${hint}`,
      );
      continue;
    }
    if (canonical !== key) {
      warnings.push(
        `${path}${key} is read as ${path}${canonical} (Whereabouts matches keys case-insensitively); write ${path}${canonical}`,
      );
    }
    // Go leaves a field unset for null (`"routes": null`, the form Whereabouts' own code writes)
    if (value === null) continue;
    if (Object.hasOwn(out, canonical)) {
      warnings.push(`${path}${canonical} is given twice (as two spellings): the last one is read, as Whereabouts does`);
    }
    define(out, canonical, normalizeValue(value, canonical, level, `${path}${canonical}`, warnings));
  }
  return out;
}

function normalizeValue(value: unknown, key: string, level: Level, path: string, warnings: string[]): unknown {
  const object = level.objects?.[key];
  if (object !== undefined && isPlainObject(value)) return normalizeLevel(value, object, `${path}.`, warnings);
  const entry = level.arrays?.[key];
  if (entry !== undefined && Array.isArray(value)) {
    return value.map((item, index) => (isPlainObject(item) ? normalizeLevel(item, entry, `${path}[${index}].`, warnings) : item));
  }
  return value;
}

/**
 * The `ipam` object (inline block or flat file) as Whereabouts decodes it: keys in another case
 * read under their own name, `null` values dropped, unknown keys dropped; a warning for each but
 * the `null`s. `path` prefixes the key names in warnings (`ipam.`).
 */
export function normalizeIpamKeys(raw: Record<string, unknown>, path: string, warnings: string[]): Record<string, unknown> {
  return normalizeLevel(raw, IPAM_LEVEL, path, warnings);
}
