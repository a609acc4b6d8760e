import { isAffinityNetwork, type Range } from "@ipamkit/core";
import {
  checkNodeBlocks,
  checkNodeSlices,
  checkUnsupported,
  checkVersion,
  checkWhereaboutsLease,
  chooseDatastore,
  collectRequestedIps,
  definedOnly,
  present,
  stickyOf,
  warnUnused,
} from "./config-checks.js";
import { normalizeIpamKeys } from "./config-compat.js";
import { ConfigError, configError, fromZodError, parseJson, scrubSecrets, scrubText } from "./config-errors.js";
import { type FlatFile, findFlatFile, isPlainObject, mergeFlat, parseMerged, readFlatFile, validateFlatFile } from "./config-flat.js";
import { withoutNodeKeys } from "./config-node-keys.js";
import { buildRanges, type SourceOf, specOf } from "./config-ranges.js";
import { type IpamInput, NETWORK_NAME, type NetConfInput, netConfSchema } from "./config-schema.js";
import { staticAddressesOf, warnNameservers } from "./config-static.js";
import type { CniVersion, ConfigFs, Datastore, IpamConfig } from "./types.js";

export { ConfigError } from "./config-errors.js";

const DEFAULT_DATA_DIR = "/var/lib/cni/ipamkit";

/**
 * Parses, validates and merges the network config an IPAM plugin receives on stdin (inline `ipam`
 * block plus the node's optional Whereabouts flat file, found through `fs.configurationPath`, never
 * through the config's own `configuration_path`; node-level keys only from that file:
 * config-node-keys.ts). Throws ConfigError (CNI code 1, 2, 6 or 7) naming
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
    const loaded = load(stdin, options, secrets);
    // a warning may echo a value (an ignored range_start…): never a password
    loaded.config.warnings = loaded.config.warnings.map((line) => scrubText(line, secrets));
    return loaded;
  } catch (error) {
    if (error instanceof ConfigError) throw scrubSecrets(error, secrets);
    throw error;
  }
}

/** stdin's network config: parsed, its `ipam` keys read as Whereabouts reads them, its version checked, validated by the schema. */
function parseStdin(
  stdin: string,
  secrets: string[],
  warnings: string[],
): { raw: Record<string, unknown>; conf: NetConfInput; cniVersion: CniVersion } {
  const parsedJson = parseJson(stdin, "stdin", "the network config on stdin");
  if (!isPlainObject(parsedJson)) throw new ConfigError(7, "stdin", "the network config on stdin must be a JSON object");
  rememberSecret(parsedJson.ipam, secrets);
  const raw = isPlainObject(parsedJson.ipam) ? { ...parsedJson, ipam: normalizeIpamKeys(parsedJson.ipam, "ipam.", warnings) } : parsedJson;
  const cniVersion = checkVersion(raw.cniVersion);
  const parsed = netConfSchema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw, []);
  return { raw, conf: parsed.data, cniVersion };
}

/** The node's flat file, read and validated: undefined when there is none; code 7 when it may not hold node-level settings. */
function nodeFlatFile(fs: ConfigFs, secrets: string[], warnings: string[]): FlatFile | undefined {
  const path = findFlatFile(fs, fs.configurationPath);
  if (path === undefined) return undefined;
  let why: string | undefined;
  try {
    why = fs.untrusted?.(path);
  } catch (error) {
    why = `it cannot be examined: ${(error as Error).message}`;
  }
  if (why !== undefined) throw new ConfigError(7, path, `flat file ${path} may not hold this node's settings: ${why}`);
  const read = readFlatFile(fs, path);
  rememberSecret(read.raw, secrets);
  // keys in another case are read as Whereabouts reads them (case-insensitively), with a warning
  const flatWarnings: string[] = [];
  const flat = { ...read, raw: normalizeIpamKeys(read.raw, "ipam.", flatWarnings) };
  for (const line of flatWarnings) warnings.push(`flat file ${path}: ${line}`);
  validateFlatFile(flat);
  return flat;
}

/** The ipam block (less its node-level keys) merged with the node's flat file (inline wins), and where each key came from. */
function mergeWithFlatFile(
  inline: Record<string, unknown>,
  { fs, secrets, warnings }: { fs: ConfigFs; secrets: string[]; warnings: string[] },
): { ipam: IpamInput; sourceOf: SourceOf; flatPath: string | undefined } {
  const flat = nodeFlatFile(fs, secrets, warnings);
  const flatPath = flat?.path;
  let merged = withoutNodeKeys(inline, flat, { fs, warnings });
  let fromFlat = new Set<string>();
  if (flat !== undefined) {
    ({ merged, fromFlat } = mergeFlat(merged, flat.raw));
    if (Object.hasOwn(flat.raw, "enable_overlapping_ranges")) {
      warnings.push(
        `ipam.enable_overlapping_ranges in flat file ${flat.path} has no effect: only the inline value (default true) applies, as in Whereabouts`,
      );
    }
  }
  const sourceOf: SourceOf = (key) => {
    const parts = key.split(".");
    return parts.some((_, i) => fromFlat.has(parts.slice(0, i + 1).join("."))) ? flatPath : undefined;
  };
  return { ipam: parseMerged(merged), sourceOf, flatPath };
}

function load(
  stdin: string,
  { fs, command }: { fs: ConfigFs; command: string },
  secrets: string[],
): { config: IpamConfig; ranges: Range[] } {
  const warnings: string[] = [];
  const { raw, conf, cniVersion } = parseStdin(stdin, secrets, warnings);
  const validAttachments = conf["cni.dev/valid-attachments"]?.map(({ containerID, ifname }) => ({ containerID, ifname }));
  if (command === "GC" && validAttachments === undefined) {
    throw configError(7, "cni.dev/valid-attachments", undefined, "required for GC (an empty list means no attachment is valid)");
  }
  const requestedIps = collectRequestedIps(conf, warnings);
  const merging = { fs, secrets, warnings };
  const { ipam, sourceOf, flatPath } = mergeWithFlatFile(raw.ipam as Record<string, unknown>, merging);
  checkUnsupported(ipam, sourceOf);
  if (ipam.agent_required === true && !present(ipam.agent_socket)) {
    throw configError(7, "ipam.agent_required", true, "needs ipam.agent_socket", { source: sourceOf("agent_required") });
  }
  checkNetworkName(ipam.network_name, sourceOf);
  if (ipam.network_name !== undefined && isAffinityNetwork(ipam.network_name)) {
    throw configError(7, "ipam.network_name", ipam.network_name, 'names ending in "node-blocks" are reserved for per-node block claims', {
      source: sourceOf("network_name"),
    });
  }
  const { ranges: parsedRanges, gateways } = buildRanges(ipam, sourceOf, warnings);
  const staticAddresses = staticAddressesOf(ipam, sourceOf);
  checkLegacyVersion(cniVersion, parsedRanges, staticAddresses);
  warnNameservers(ipam, warnings);
  const nodeBlocks = checkNodeBlocks(ipam, parsedRanges, sourceOf, warnings);
  const datastore = chooseDatastore(ipam, sourceOf, warnings);
  warnUnused(ipam, datastore, sourceOf, warnings);
  checkWhereaboutsLease(ipam, datastore, sourceOf);
  const nodeSlices = checkNodeSlices(ipam, conf.name, parsedRanges, datastore, sourceOf);
  const config: IpamConfig = {
    cniVersion,
    name: conf.name,
    networkName: ipam.network_name ?? "",
    ranges: parsedRanges.map(specOf),
    gateways,
    staticAddresses,
    routes: ipam.routes ?? [],
    dns: ipam.dns,
    overlappingRanges: ipam.enable_overlapping_ranges ?? true,
    policy: present(ipam.allocation_policy) ? (ipam.allocation_policy as IpamConfig["policy"]) : "lowest-free",
    datastore,
    ...storeSettings(ipam, datastore),
    agent: { ...definedOnly({ socket: ipam.agent_socket }), required: ipam.agent_required ?? false },
    requestedIps,
    nodeBlocks,
    ...(nodeSlices === undefined ? {} : { nodeSlices }),
    ...stickyOf(ipam, sourceOf, warnings),
    validAttachments,
    prevResult: conf.prevResult,
    flatFile: flatPath,
    warnings,
  };
  return { config, ranges: parsedRanges };
}

/**
 * `network_name` prefixes object names: a lowercase DNS-1123 label fragment (Whereabouts takes any
 * text, and the API server then refuses every pool it names). The error suggests the nearest valid name.
 */
function checkNetworkName(name: string | undefined, sourceOf: SourceOf): void {
  if (name === undefined || NETWORK_NAME.test(name)) return;
  const nearest = name
    .toLowerCase()
    .replace(/[^-a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  const hint = nearest === "" ? "" : `; e.g. "${nearest}"`;
  throw configError(
    7,
    "ipam.network_name",
    name,
    `must be empty or a lowercase DNS-1123 label fragment (a-z, 0-9, '-'; alphanumeric at both ends)${hint}`,
    {
      source: sourceOf("network_name"),
    },
  );
}

/** 0.1.0 and 0.2.0 results hold one address per family: more is refused (Whereabouts refuses it for static addresses). */
function checkLegacyVersion(cniVersion: CniVersion, ranges: readonly Range[], staticAddresses: IpamConfig["staticAddresses"]): void {
  if (cniVersion !== "0.1.0" && cniVersion !== "0.2.0") return;
  for (const family of [4, 6] as const) {
    const count =
      ranges.filter((r) => r.family === family).length + staticAddresses.filter((a) => a.address.includes(":") === (family === 6)).length;
    if (count > 1) {
      throw configError(
        7,
        "cniVersion",
        cniVersion,
        `a ${cniVersion} result holds one IPv${family} address, this config gives ${count}; use cniVersion 0.3.1 or later`,
      );
    }
  }
}

/**
 * `whereabouts_lease`: true takes Whereabouts' Lease around every ADD's writes; false never; unset
 * ("auto") takes it only while Whereabouts is seen writing it (the Kubernetes store, not per-node
 * blocks, which Whereabouts never writes).
 */
function whereaboutsLeaseOf(ipam: IpamInput, datastore: Datastore): Pick<IpamConfig["kubernetes"], "whereaboutsLease"> {
  if (ipam.whereabouts_lease === true) return { whereaboutsLease: true };
  if (ipam.whereabouts_lease === false || ipam.node_block_size !== undefined || datastore !== "kubernetes") return {};
  return { whereaboutsLease: "auto" };
}

/** Each store's settings (only the chosen datastore's are used; warnUnused names the others). */
function storeSettings(ipam: IpamInput, datastore: Datastore): Pick<IpamConfig, "dataDir" | "etcd" | "kubernetes"> {
  return {
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
      ...whereaboutsLeaseOf(ipam, datastore),
    },
  };
}

function rememberSecret(ipam: unknown, secrets: string[]): void {
  if (isPlainObject(ipam) && typeof ipam.etcd_password === "string") secrets.push(ipam.etcd_password);
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
