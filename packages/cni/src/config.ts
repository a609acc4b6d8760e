import {
  blockLayout,
  familyBits,
  formatIp,
  InvalidAddressError,
  InvalidRangeError,
  isAffinityNetwork,
  parseIp,
  type Range,
} from "@ipamkit/core";
import { ConfigError, configError, fromZodError, parseJson, scrubSecrets } from "./config-errors.js";
import {
  configurationPathFile,
  findFlatFile,
  isPlainObject,
  mergeFlat,
  parseMerged,
  readFlatFile,
  validateFlatFile,
} from "./config-flat.js";
import { buildRanges, type SourceOf, specOf } from "./config-ranges.js";
import { type IpamInput, type NetConfInput, netConfSchema } from "./config-schema.js";
import { type CniVersion, type ConfigFs, type Datastore, DEFAULT_STICKY_TTL, type IpamConfig, SUPPORTED_VERSIONS } from "./types.js";

export { ConfigError } from "./config-errors.js";

const DEFAULT_DATA_DIR = "/var/lib/cni/ipamkit";
const DATASTORES: readonly Datastore[] = ["kubernetes", "etcd", "file"];
const POLICIES: readonly IpamConfig["policy"][] = ["lowest-free", "round-robin"];
const ETCD_KEYS = ["etcd_host", "etcd_username", "etcd_password", "etcd_key_file", "etcd_cert_file", "etcd_ca_cert_file"] as const;
const LEADER_KEYS = ["leader_lease_duration", "leader_renew_deadline", "leader_retry_period"] as const;

/**
 * Parses, validates and merges the network config an IPAM plugin receives on stdin (inline `ipam`
 * block plus the optional Whereabouts flat file). Throws ConfigError (CNI code 1, 2, 6 or 7) naming
 * the offending key and value; never returns a partially valid config. Nothing is ignored silently:
 * accepted keys that have no effect produce a line in `warnings`.
 */
export function loadIpamConfig(stdin: string, options: { fs: ConfigFs; command: "ADD" | "DEL" | "CHECK" | "GC" | "STATUS" }): IpamConfig {
  return loadIpamConfigAndRanges(stdin, options).config;
}

/** loadIpamConfig, with the ranges it parsed while validating (core `Range`s, in the config's order). */
export function loadIpamConfigAndRanges(
  stdin: string,
  options: { fs: ConfigFs; command: "ADD" | "DEL" | "CHECK" | "GC" | "STATUS" },
): { config: IpamConfig; ranges: Range[] } {
  const secrets: string[] = [];
  try {
    return load(stdin, options, secrets);
  } catch (error) {
    if (error instanceof ConfigError) throw scrubSecrets(error, secrets);
    throw error;
  }
}

function load(
  stdin: string,
  { fs, command }: { fs: ConfigFs; command: string },
  secrets: string[],
): { config: IpamConfig; ranges: Range[] } {
  const raw = parseJson(stdin, "stdin", "the network config on stdin");
  if (!isPlainObject(raw)) throw new ConfigError(7, "stdin", "the network config on stdin must be a JSON object");
  rememberSecret(raw.ipam, secrets);
  const cniVersion = checkVersion(raw.cniVersion);
  const parsed = netConfSchema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw, []);
  const conf = parsed.data;
  const validAttachments = conf["cni.dev/valid-attachments"]?.map(({ containerID, ifname }) => ({ containerID, ifname }));
  if (command === "GC" && validAttachments === undefined) {
    throw configError(7, "cni.dev/valid-attachments", undefined, "required for GC (an empty list means no attachment is valid)");
  }
  const warnings: string[] = [];
  const requestedIps = collectRequestedIps(conf, warnings);

  const configurationPath = conf.ipam.configuration_path;
  const flatPath = findFlatFile(fs, configurationPath);
  if (configurationPath !== undefined && configurationPath !== "" && flatPath !== configurationPathFile(configurationPath)) {
    warnings.push(
      `ipam.configuration_path: no flat file at ${configurationPathFile(configurationPath)}; ${flatPath === undefined ? "no default flat file exists either" : `used ${flatPath}`}`,
    );
  }
  let merged = raw.ipam as Record<string, unknown>;
  let fromFlat = new Set<string>();
  if (flatPath !== undefined) {
    const flat = readFlatFile(fs, flatPath);
    rememberSecret(flat.raw, secrets);
    validateFlatFile(flat);
    ({ merged, fromFlat } = mergeFlat(merged, flat.raw));
    if (Object.hasOwn(flat.raw, "enable_overlapping_ranges")) {
      warnings.push(
        `ipam.enable_overlapping_ranges in flat file ${flatPath} has no effect: only the inline value (default true) applies, as in Whereabouts`,
      );
    }
  }
  const ipam = parseMerged(merged);
  const sourceOf: SourceOf = (key) => {
    const parts = key.split(".");
    return parts.some((_, i) => fromFlat.has(parts.slice(0, i + 1).join("."))) ? flatPath : undefined;
  };

  checkUnsupported(ipam, sourceOf);
  if (ipam.agent_required === true && !present(ipam.agent_socket)) {
    throw configError(7, "ipam.agent_required", true, "needs ipam.agent_socket", { source: sourceOf("agent_required") });
  }
  if (ipam.network_name !== undefined && isAffinityNetwork(ipam.network_name)) {
    throw configError(7, "ipam.network_name", ipam.network_name, 'names ending in "node-blocks" are reserved for per-node block claims', {
      source: sourceOf("network_name"),
    });
  }
  const parsedRanges = buildRanges(ipam, sourceOf, warnings);
  const nodeBlocks = checkNodeBlocks(ipam, parsedRanges, sourceOf, warnings);
  const datastore = chooseDatastore(ipam, sourceOf);
  warnUnused(ipam, datastore, sourceOf, warnings);
  checkWhereaboutsLease(ipam, datastore, sourceOf);

  const config: IpamConfig = {
    cniVersion,
    name: conf.name,
    networkName: ipam.network_name ?? "",
    ranges: parsedRanges.map(specOf),
    routes: ipam.routes ?? [],
    dns: ipam.dns,
    overlappingRanges: ipam.enable_overlapping_ranges ?? true,
    policy: present(ipam.allocation_policy) ? (ipam.allocation_policy as IpamConfig["policy"]) : "lowest-free",
    datastore,
    dataDir: ipam.data_dir ?? DEFAULT_DATA_DIR,
    etcd: definedOnly({
      host: ipam.etcd_host,
      username: ipam.etcd_username,
      password: ipam.etcd_password,
      keyFile: ipam.etcd_key_file,
      certFile: ipam.etcd_cert_file,
      caCertFile: ipam.etcd_ca_cert_file,
    }),
    kubernetes: {
      ...definedOnly({ kubeconfig: ipam.kubernetes?.kubeconfig }),
      ...(ipam.whereabouts_lease === true ? { whereaboutsLease: true } : {}),
    },
    agent: { ...definedOnly({ socket: ipam.agent_socket }), required: ipam.agent_required ?? false },
    requestedIps,
    nodeBlocks,
    ...stickyOf(ipam, sourceOf, warnings),
    validAttachments,
    prevResult: conf.prevResult,
    flatFile: flatPath,
    warnings,
  };
  return { config, ranges: parsedRanges };
}

/** `sticky`, `sticky_ttl`: per-range pools only (per-node blocks hand a reborn pod another node's block). */
function stickyOf(ipam: IpamInput, sourceOf: SourceOf, warnings: string[]): Pick<IpamConfig, "sticky"> {
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
function checkWhereaboutsLease(ipam: IpamInput, datastore: Datastore, sourceOf: SourceOf): void {
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

function present(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

function definedOnly<T extends Record<string, string | undefined>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

function rememberSecret(ipam: unknown, secrets: string[]): void {
  if (isPlainObject(ipam) && typeof ipam.etcd_password === "string") secrets.push(ipam.etcd_password);
}

function checkVersion(value: unknown): CniVersion {
  const supported = `supported: ${SUPPORTED_VERSIONS.join(", ")}`;
  if (value === undefined) throw configError(1, "cniVersion", value, `absent, which means 0.1.0 and is not supported (${supported})`);
  if (typeof value !== "string") throw configError(7, "cniVersion", value, "must be a string");
  const version = SUPPORTED_VERSIONS.find((v) => v === value);
  if (version === undefined) throw configError(1, "cniVersion", value, `unsupported CNI version (${supported})`);
  return version;
}

/** Addresses requested by the runtime (`runtimeConfig.ips`) or in `args.cni.ips`, canonical and without prefix. */
function collectRequestedIps(conf: NetConfInput, warnings: string[]): string[] {
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
function checkUnsupported(ipam: IpamInput, sourceOf: SourceOf): void {
  const fail = (key: keyof IpamInput, reason: string) => configError(2, `ipam.${key}`, ipam[key], reason, { source: sourceOf(key) });
  if (ipam.addresses !== undefined && ipam.addresses.length > 0) {
    throw fail("addresses", "static addresses in the IPAM config are not supported; request them with runtimeConfig.ips or args.cni.ips");
  }
  if (present(ipam.node_slice_size)) {
    throw fail(
      "node_slice_size",
      "Whereabouts' node slices need its node-slice controller and NodeSlicePool objects, which ipamkit does not run; ipamkit's own per-node blocks need no controller: set node_block_size (addresses per block) instead",
    );
  }
  if (ipam.sleep_for_race !== undefined && ipam.sleep_for_race !== 0) {
    throw fail("sleep_for_race", "not supported (a Whereabouts race-reproduction switch); remove it or set 0");
  }
  if (present(ipam.datastore) && !DATASTORES.includes(ipam.datastore as Datastore)) {
    throw fail("datastore", `unsupported datastore (supported: ${DATASTORES.join(", ")})`);
  }
  if (present(ipam.allocation_policy) && !POLICIES.includes(ipam.allocation_policy as IpamConfig["policy"])) {
    throw fail("allocation_policy", `unsupported allocation policy (supported: ${POLICIES.join(", ")})`);
  }
}

/** `node_block_size`: a power of two, at least 4, and every range holds at least two blocks. */
function checkNodeBlocks(ipam: IpamInput, ranges: readonly Range[], sourceOf: SourceOf, warnings: string[]): IpamConfig["nodeBlocks"] {
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

/** `datastore` if set; otherwise kubernetes when a kubeconfig is given, etcd when an etcd host is, else file. */
function chooseDatastore(ipam: IpamInput, sourceOf: SourceOf): Datastore {
  const kubeconfig = ipam.kubernetes?.kubeconfig;
  const datastore: Datastore = present(ipam.datastore)
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
function warnUnused(ipam: IpamInput, datastore: Datastore, sourceOf: SourceOf, warnings: string[]): void {
  const warn = (key: string, reason: string) => {
    const source = sourceOf(key);
    warnings.push(`ipam.${key}${source === undefined ? "" : ` (from flat file ${source})`} is accepted but unused: ${reason}`);
  };
  for (const key of LEADER_KEYS) {
    if (ipam[key] !== undefined) warn(key, "ipamkit takes no Lease; every write is a compare-and-swap");
  }
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

/** The etcd settings back in Whereabouts' key names (what storage-etcd's etcdOptionsFromWhereabouts takes). */
export function whereaboutsEtcdKeys(etcd: IpamConfig["etcd"]): {
  etcd_host?: string;
  etcd_username?: string;
  etcd_password?: string;
  etcd_key_file?: string;
  etcd_cert_file?: string;
  etcd_ca_cert_file?: string;
} {
  const keys = {
    etcd_host: etcd.host,
    etcd_username: etcd.username,
    etcd_password: etcd.password,
    etcd_key_file: etcd.keyFile,
    etcd_cert_file: etcd.certFile,
    etcd_ca_cert_file: etcd.caCertFile,
  };
  return definedOnly(keys);
}
