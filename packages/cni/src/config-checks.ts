import { blockLayout, familyBits, formatIp, InvalidAddressError, InvalidRangeError, parseIp, type Range } from "@ipamkit/core";
import { configError } from "./config-errors.js";
import type { SourceOf } from "./config-ranges.js";
import type { IpamInput, NetConfInput } from "./config-schema.js";
import { type CniVersion, type Datastore, DEFAULT_STICKY_TTL, type IpamConfig, SUPPORTED_VERSIONS } from "./types.js";

// The checks and derived values of loadIpamConfig (config.ts), one key or group of keys each.

const DATASTORES: readonly Datastore[] = ["kubernetes", "etcd", "file"];
const POLICIES: readonly IpamConfig["policy"][] = ["lowest-free", "round-robin"];
const ETCD_KEYS = ["etcd_host", "etcd_username", "etcd_password", "etcd_key_file", "etcd_cert_file", "etcd_ca_cert_file"] as const;
const LEADER_KEYS = ["leader_lease_duration", "leader_renew_deadline", "leader_retry_period"] as const;

/** `sticky`, `sticky_ttl`: per-range pools only (per-node blocks hand a reborn pod another node's block). */
export function stickyOf(ipam: IpamInput, sourceOf: SourceOf, warnings: string[]): Pick<IpamConfig, "sticky"> {
  if (ipam.sticky !== true) {
    if (ipam.sticky_ttl !== undefined) warnings.push("ipam.sticky_ttl is accepted but unused: it is the keep time of sticky: true");
    return {};
  }
  if (ipam.node_block_size !== undefined) {
    throw configError(7, "ipam.sticky", true, "cannot be combined with node_block_size (a reborn pod may land on another node)", {
      source: sourceOf("sticky"),
    });
  }
  return { sticky: { keepSeconds: ipam.sticky_ttl ?? DEFAULT_STICKY_TTL } };
}

/** `whereabouts_lease` coordinates with Whereabouts on its pools: only the Kubernetes store has them, never per-node blocks. */
export function checkWhereaboutsLease(ipam: IpamInput, datastore: Datastore, sourceOf: SourceOf): void {
  if (ipam.whereabouts_lease !== true) return;
  const source = { source: sourceOf("whereabouts_lease") };
  if (datastore !== "kubernetes") {
    throw configError(
      7,
      "ipam.whereabouts_lease",
      true,
      `needs datastore "kubernetes" (Whereabouts' Lease guards its pools there), not "${datastore}"`,
      source,
    );
  }
  if (ipam.node_block_size !== undefined) {
    throw configError(
      7,
      "ipam.whereabouts_lease",
      true,
      "cannot be combined with node_block_size (Whereabouts never writes per-node blocks)",
      source,
    );
  }
}

export function present(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

export function definedOnly<T extends Record<string, string | undefined>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

export function checkVersion(value: unknown): CniVersion {
  const supported = `supported: ${SUPPORTED_VERSIONS.join(", ")}`;
  if (value === undefined) throw configError(1, "cniVersion", value, `absent, which means 0.1.0 and is not supported (${supported})`);
  if (typeof value !== "string") throw configError(7, "cniVersion", value, "must be a string");
  const version = SUPPORTED_VERSIONS.find((v) => v === value);
  if (version === undefined) throw configError(1, "cniVersion", value, `unsupported CNI version (${supported})`);
  return version;
}

/** Addresses requested by the runtime (`runtimeConfig.ips`) or in `args.cni.ips`, canonical and without prefix. */
export function collectRequestedIps(conf: NetConfInput, warnings: string[]): string[] {
  // a Set: the lists come from the runtime and may be long; dedupe in linear time
  const out = new Set<string>();
  const add = (list: readonly string[] | undefined, key: string) => {
    list?.forEach((text, index) => {
      out.add(requestedIp(text, `${key}[${index}]`));
    });
  };
  add(conf.runtimeConfig?.ips, "runtimeConfig.ips");
  add(conf.args?.cni?.ips, "args.cni.ips");
  if (conf.runtimeConfig !== undefined && Object.hasOwn(conf.runtimeConfig, "ipRanges")) {
    warnings.push("runtimeConfig.ipRanges is accepted but unused: ranges come from the ipam block");
  }
  return [...out];
}

function requestedIp(text: string, key: string): string {
  const slash = text.indexOf("/");
  try {
    const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
    if (slash >= 0) {
      const prefix = text.slice(slash + 1);
      const bits = familyBits(ip.family);
      if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits) throw configError(7, key, text, `prefix length must be 0..${bits}`);
    }
    return formatIp(ip);
  } catch (error) {
    if (!(error instanceof InvalidAddressError)) throw error;
    throw configError(7, key, text, 'not an IP address ("ip" or "ip/prefix")', { cause: error });
  }
}

/** Well-typed values ipamkit does not support: CNI code 2, naming the key and value. */
export function checkUnsupported(ipam: IpamInput, sourceOf: SourceOf): void {
  const fail = (key: keyof IpamInput, reason: string) => configError(2, `ipam.${key}`, ipam[key], reason, { source: sourceOf(key) });
  const asWhereabouts = ipam.type === "whereabouts" && present(ipam.kubernetes?.kubeconfig);
  if (!asWhereabouts && present(ipam.datastore) && !DATASTORES.includes(ipam.datastore as Datastore)) {
    throw fail("datastore", `unsupported datastore (supported: ${DATASTORES.join(", ")})`);
  }
  if (present(ipam.allocation_policy) && !POLICIES.includes(ipam.allocation_policy as IpamConfig["policy"])) {
    throw fail("allocation_policy", `unsupported allocation policy (supported: ${POLICIES.join(", ")})`);
  }
}

/**
 * `node_slice_size` (Whereabouts' node slices, "/N" or "N"): the node allocates in its slice of the
 * range, which its NodeSlicePool (`network_name`, else the network's `name`) assigns it. Kubernetes
 * store only (NodeSlicePools live there); one range (Whereabouts serves every range from the first
 * range's slice); a slice no wider than the range and with addresses to hand out; not with
 * per-node blocks or sticky addresses (a pod reborn on another node lands in another slice).
 */
export function checkNodeSlices(
  ipam: IpamInput,
  name: string,
  ranges: readonly Range[],
  datastore: Datastore,
  sourceOf: SourceOf,
): IpamConfig["nodeSlices"] {
  const size = ipam.node_slice_size;
  if (!present(size)) return undefined;
  const fail = (reason: string) => configError(7, "ipam.node_slice_size", size, reason, { source: sourceOf("node_slice_size") });
  const digits = /^\/?(\d{1,3})$/.exec(size)?.[1];
  if (digits === undefined) throw fail('must be a prefix length, e.g. "/24"');
  if (datastore !== "kubernetes") throw fail(`needs datastore "kubernetes" (NodeSlicePools live there), not "${datastore}"`);
  if (ipam.node_block_size !== undefined)
    throw fail("cannot be combined with node_block_size (two ways of giving nodes their own addresses)");
  if (ipam.sticky === true) throw fail("cannot be combined with sticky: true (a pod reborn on another node lands in another slice)");
  const [range, ...more] = ranges;
  if (range === undefined || more.length > 0) {
    throw fail(
      `slices one range, and this config has ${ranges.length} (Whereabouts would serve every range from the first range's slice): put each range in a network of its own`,
    );
  }
  const prefix = Number(digits);
  const bits = familyBits(range.family);
  if (prefix < range.cidr.prefix || prefix > bits - 2) {
    throw fail(`must be from /${range.cidr.prefix} (the range ${range.cidr.text}) to /${bits - 2} (a slice with addresses to hand out)`);
  }
  return { prefix, pool: present(ipam.network_name) ? ipam.network_name : name };
}

/** `node_block_size`: a power of two, at least 4, and every range holds at least two blocks. */
export function checkNodeBlocks(
  ipam: IpamInput,
  ranges: readonly Range[],
  sourceOf: SourceOf,
  warnings: string[],
): IpamConfig["nodeBlocks"] {
  const size = ipam.node_block_size;
  if (size === undefined) {
    if (present(ipam.node_name))
      warnings.push("ipam.node_name is accepted but unused: it names the owner of per-node blocks (node_block_size)");
    return undefined;
  }
  if (size < 4 || !Number.isInteger(Math.log2(size))) {
    throw configError(7, "ipam.node_block_size", size, "must be a power of two, at least 4 (addresses per block)", {
      source: sourceOf("node_block_size"),
    });
  }
  for (const range of ranges) {
    try {
      blockLayout(range, size);
    } catch (error) {
      if (!(error instanceof InvalidRangeError)) throw error;
      throw configError(7, "ipam.node_block_size", size, `range ${range.spec.range} must hold at least two blocks of ${size} addresses`, {
        source: sourceOf("node_block_size"),
      });
    }
  }
  return { size, ...(present(ipam.node_name) ? { node: ipam.node_name } : {}) };
}

/**
 * `datastore` if set; otherwise kubernetes when a kubeconfig is given, etcd when an etcd host is,
 * else file. With `type: "whereabouts"` and a kubeconfig, the store is Kubernetes whatever
 * `datastore` says, as Whereabouts (Kubernetes only since v0.6) reads it: a stale `datastore: etcd`
 * beside the installer's flat file must not move a network to another store (a warning says so).
 */
export function chooseDatastore(ipam: IpamInput, sourceOf: SourceOf, warnings: string[] = []): Datastore {
  const kubeconfig = ipam.kubernetes?.kubeconfig;
  const asWhereabouts = ipam.type === "whereabouts" && present(kubeconfig);
  if (asWhereabouts && present(ipam.datastore) && ipam.datastore !== "kubernetes") {
    const from = sourceOf("datastore");
    warnings.push(
      `ipam.datastore ${JSON.stringify(ipam.datastore)}${from === undefined ? "" : ` (from flat file ${from})`} is ignored: with type "whereabouts" and kubernetes.kubeconfig the store is Kubernetes, as in Whereabouts; set type "ipamkit" to use another store`,
    );
  }
  const datastore: Datastore = asWhereabouts
    ? "kubernetes"
    : present(ipam.datastore)
      ? (ipam.datastore as Datastore)
      : present(kubeconfig)
        ? "kubernetes"
        : present(ipam.etcd_host)
          ? "etcd"
          : "file";
  const source = { source: sourceOf("datastore") };
  if (datastore === "kubernetes" && !present(kubeconfig)) {
    throw configError(7, "ipam.kubernetes.kubeconfig", kubeconfig, 'required when datastore is "kubernetes"', source);
  }
  if (datastore === "etcd" && !present(ipam.etcd_host)) {
    throw configError(7, "ipam.etcd_host", ipam.etcd_host, 'required when datastore is "etcd"', source);
  }
  return datastore;
}

/** One warning line per accepted key that has no effect with this config. */
export function warnUnused(ipam: IpamInput, datastore: Datastore, sourceOf: SourceOf, warnings: string[]): void {
  const warn = (key: string, reason: string) => {
    const source = sourceOf(key);
    warnings.push(`ipam.${key}${source === undefined ? "" : ` (from flat file ${source})`} is accepted but unused: ${reason}`);
  };
  for (const key of LEADER_KEYS) {
    if (ipam[key] !== undefined) warn(key, "ipamkit takes no Lease; every write is a compare-and-swap");
  }
  if (ipam.sleep_for_race !== undefined && ipam.sleep_for_race !== 0) warn("sleep_for_race", "a Whereabouts race-reproduction pause");
  if (ipam.reconciler_cron_expression !== undefined) warn("reconciler_cron_expression", "it is read by the reconciler, not by the plugin");
  if (ipam.log_file !== undefined) warn("log_file", "the plugin logs to stderr");
  if (ipam.log_level !== undefined) warn("log_level", "the plugin logs to stderr");
  if (ipam.kubernetes?.k8s_api_root !== undefined) warn("kubernetes.k8s_api_root", "the API server comes from the kubeconfig");
  if (datastore !== "kubernetes" && ipam.kubernetes?.kubeconfig !== undefined) {
    warn("kubernetes.kubeconfig", `datastore is "${datastore}"`);
  }
  if (datastore !== "etcd") {
    for (const key of ETCD_KEYS) if (ipam[key] !== undefined) warn(key, `datastore is "${datastore}"`);
  }
  if (datastore !== "file" && ipam.data_dir !== undefined) warn("data_dir", `datastore is "${datastore}"`);
}
