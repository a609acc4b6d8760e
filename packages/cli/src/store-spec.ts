import { existsSync, readFileSync } from "node:fs";
import { type IpamConfig, loadIpamConfig } from "@ipamkit/cni";
import { parseRange, type Range } from "@ipamkit/core";
import { CliError } from "./errors.js";

/** The store options every command takes, as commander parses them. */
export interface StoreFlags {
  config?: string;
  kubeconfig?: string;
  namespace?: string;
  etcdEndpoints?: string;
  etcdUsername?: string;
  etcdPasswordFile?: string;
  etcdCaFile?: string;
  etcdCertFile?: string;
  etcdKeyFile?: string;
  etcdPrefix?: string;
  dataDir?: string;
  network?: string;
}

export interface EtcdSpec {
  endpoints: string[];
  username?: string;
  password?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  prefix?: string;
}

/** Which store to open and how, and what a config says of its network (when one was given). */
export interface StoreSpec {
  datastore: "file" | "etcd" | "kubernetes";
  dataDir?: string;
  /** A kubeconfig file (undefined: client-node's defaults) — the Kubernetes store, and pods for the audit. */
  kubeconfig?: string;
  namespace?: string;
  etcd?: EtcdSpec;
  /** Only this network (`network_name`; "" the unnamed one); undefined: every network. */
  network?: string;
  /** The config's ranges (capacity and block grouping), when a config was given. */
  ranges?: Range[];
  /** The config's `enable_overlapping_ranges`; undefined without a config. */
  overlappingRanges?: boolean;
  /** The config's `node_block_size`. */
  nodeBlockSize?: number;
}

const ETCD_FLAGS = ["etcdUsername", "etcdPasswordFile", "etcdCaFile", "etcdCertFile", "etcdKeyFile", "etcdPrefix"] as const;
const flagName = (key: string) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const readText = (path: string, what: string): string => {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
};

/** The store the flags choose: `--config`, or exactly one of `--etcd-endpoints`, `--data-dir`, `--kubeconfig`. */
export function resolveStoreSpec(flags: StoreFlags): StoreSpec {
  if (flags.config !== undefined) {
    const explicit = (["kubeconfig", "etcdEndpoints", "dataDir", ...ETCD_FLAGS] as const).filter((k) => flags[k] !== undefined);
    if (explicit.length > 0)
      throw new CliError(`--config and ${flagName(explicit[0] as string)} exclude each other: the config names the store`);
    return fromConfig(flags.config, flags);
  }
  const network = flags.network === undefined ? {} : { network: flags.network };
  const namespace = flags.namespace === undefined ? {} : { namespace: flags.namespace };
  const kubeconfig = flags.kubeconfig === undefined ? {} : { kubeconfig: flags.kubeconfig };
  if (flags.etcdEndpoints !== undefined && flags.dataDir !== undefined)
    throw new CliError("--etcd-endpoints and --data-dir exclude each other");
  if (flags.etcdEndpoints === undefined) {
    const stray = ETCD_FLAGS.find((k) => flags[k] !== undefined);
    if (stray !== undefined) throw new CliError(`${flagName(stray)} is only used with --etcd-endpoints`);
  }
  if (flags.etcdEndpoints !== undefined) return { datastore: "etcd", etcd: etcdFromFlags(flags), ...kubeconfig, ...namespace, ...network };
  if (flags.dataDir !== undefined) return { datastore: "file", dataDir: flags.dataDir, ...kubeconfig, ...namespace, ...network };
  if (flags.kubeconfig !== undefined || process.env.KUBECONFIG !== undefined)
    return { datastore: "kubernetes", ...kubeconfig, ...namespace, ...network };
  throw new CliError("no store given: use --config FILE, --kubeconfig PATH, --etcd-endpoints URLS or --data-dir DIR");
}

function etcdFromFlags(flags: StoreFlags): EtcdSpec {
  const endpoints = (flags.etcdEndpoints ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (endpoints.length === 0) throw new CliError("--etcd-endpoints: give at least one URL");
  const tls = flags.etcdCaFile ?? flags.etcdCertFile ?? flags.etcdKeyFile;
  return {
    endpoints,
    ...(flags.etcdUsername === undefined ? {} : { username: flags.etcdUsername }),
    // never the password itself on a command line (ps shows it)
    ...(flags.etcdPasswordFile === undefined ? {} : { password: readText(flags.etcdPasswordFile, "--etcd-password-file").trim() }),
    ...(tls === undefined
      ? {}
      : {
          tls: {
            ...(flags.etcdCaFile === undefined ? {} : { caFile: flags.etcdCaFile }),
            ...(flags.etcdCertFile === undefined ? {} : { certFile: flags.etcdCertFile }),
            ...(flags.etcdKeyFile === undefined ? {} : { keyFile: flags.etcdKeyFile }),
          },
        }),
    ...(flags.etcdPrefix === undefined ? {} : { prefix: flags.etcdPrefix }),
  };
}

/** A stand-in range for a flat file that names none: validated with it, then dropped. */
const NO_RANGE = "192.0.2.0/30";

/**
 * The network config a `--config` file holds: a NetworkAttachmentDefinition (its `spec.config`),
 * a CNI network config or conflist (the plugin with an `ipam` block), or a Whereabouts flat file
 * (`whereabouts.conf`: the IPAM keys alone). Validated by the plugin's own loader, so the CLI reads
 * exactly the store the plugin would.
 */
function netConfOf(path: string): { netconf: Record<string, unknown>; flat: boolean; flatFile?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(readText(path, "--config"));
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`--config ${path}: not JSON: ${(error as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new CliError(`--config ${path}: expected a JSON object`);
  const obj = raw as Record<string, unknown>;
  if (obj.kind === "NetworkAttachmentDefinition") {
    const config = (obj.spec as { config?: unknown } | undefined)?.config;
    if (typeof config !== "string") throw new CliError(`--config ${path}: the NetworkAttachmentDefinition has no spec.config string`);
    try {
      return netConfOfText(config, path);
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(`--config ${path}: spec.config is not JSON: ${(error as Error).message}`);
    }
  }
  return fromObject(obj, path);
}

function netConfOfText(text: string, path: string): { netconf: Record<string, unknown>; flat: boolean; flatFile?: string } {
  const parsed = JSON.parse(text) as unknown;
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new CliError(`--config ${path}: spec.config must be a JSON object`);
  return fromObject(parsed as Record<string, unknown>, path);
}

function fromObject(obj: Record<string, unknown>, path: string): { netconf: Record<string, unknown>; flat: boolean; flatFile?: string } {
  if (Array.isArray(obj.plugins)) {
    const plugin = (obj.plugins as unknown[]).find((p) => p !== null && typeof p === "object" && "ipam" in (p as object)) as
      | Record<string, unknown>
      | undefined;
    if (plugin === undefined) throw new CliError(`--config ${path}: no plugin of the conflist has an ipam block`);
    return { netconf: { cniVersion: obj.cniVersion, name: obj.name, ...plugin }, flat: false };
  }
  if (obj.ipam !== undefined) return { netconf: obj, flat: false };
  // a flat file: the plugin's loader reads it as the node's flat file, as it would on a node
  const ipam: Record<string, unknown> = { type: "ipamkit" };
  const names = obj.range !== undefined || obj.ipRanges !== undefined;
  if (!names) ipam.range = NO_RANGE;
  return { netconf: { cniVersion: "1.0.0", name: "ipamkit-cli", ipam }, flat: !names, flatFile: path };
}

function fromConfig(path: string, flags: StoreFlags): StoreSpec {
  const { netconf, flat, flatFile } = netConfOf(path);
  let config: IpamConfig;
  try {
    config = loadIpamConfig(JSON.stringify(netconf), {
      // the operator names the file: it is this run's node flat file (a network config's own keys never are)
      fs: {
        exists: existsSync,
        readText: (p) => readFileSync(p, "utf8"),
        ...(flatFile === undefined ? {} : { configurationPath: flatFile }),
      },
      command: "STATUS",
    });
  } catch (error) {
    throw new CliError(`--config ${path}: ${(error as Error).message.split("\n")[0]}`);
  }
  const e = config.etcd;
  const spec: StoreSpec = {
    datastore: config.datastore,
    network: flags.network ?? config.networkName,
    overlappingRanges: config.overlappingRanges,
    ...(flat ? {} : { ranges: config.ranges.map((r) => parseRange(r)) }),
    ...(config.nodeBlocks === undefined ? {} : { nodeBlockSize: config.nodeBlocks.size }),
    ...(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
  };
  if (config.datastore === "file") spec.dataDir = config.dataDir;
  if (config.datastore === "kubernetes" && config.kubernetes.kubeconfig !== undefined) spec.kubeconfig = config.kubernetes.kubeconfig;
  if (config.datastore === "etcd") {
    const tls = e.caCertFile ?? e.certFile ?? e.keyFile;
    spec.etcd = {
      endpoints: (e.host ?? "")
        .split(",")
        .map((h) => h.trim())
        .filter(Boolean),
      ...(e.username === undefined ? {} : { username: e.username }),
      ...(e.password === undefined ? {} : { password: e.password }),
      ...(tls === undefined
        ? {}
        : {
            tls: {
              ...(e.caCertFile ? { caFile: e.caCertFile } : {}),
              ...(e.certFile ? { certFile: e.certFile } : {}),
              ...(e.keyFile ? { keyFile: e.keyFile } : {}),
            },
          }),
    };
  }
  return spec;
}
