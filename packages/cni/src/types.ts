import type { RangeSpec } from "@ipamkit/core";

/** The CNI commands. */
export type CniCommand = "ADD" | "DEL" | "CHECK" | "VERSION" | "GC" | "STATUS";

/** Versions this plugin speaks, oldest first. */
export const SUPPORTED_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];

/** Which store a config selects. */
export type Datastore = "file" | "etcd" | "kubernetes";

/** A route as in a CNI result. */
export interface Route {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

export interface Dns {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/**
 * The validated, merged IPAM configuration (inline config merged with the flat file). Every key
 * accepted here is honoured by the dispatcher; keys that only mean something to Whereabouts are
 * reported in `warnings`.
 */
export interface IpamConfig {
  /** `cniVersion` of the network config. */
  cniVersion: CniVersion;
  /** Network `name` (CNI). */
  name: string;
  /** `ipam.network_name` ("" when unset). */
  networkName: string;
  /**
   * One entry per range: `range` (+ `range_start`, `range_end`, `exclude`) first, then `ipRanges`,
   * as handed out (bounds clamped as Whereabouts does; `gateway` only when it lies in the range and
   * is therefore never handed out).
   */
  ranges: RangeSpec[];
  /** The gateway each range's result carries (`ipam.gateway` or the entry's own), which may lie outside the range. */
  gateways: (string | undefined)[];
  /** `addresses`: static `ip/prefix` entries appended to every ADD result, never reserved. */
  staticAddresses: { address: string; gateway?: string }[];
  routes: Route[];
  dns: Dns | undefined;
  /** `enable_overlapping_ranges` (default true; the inline value wins, as in Whereabouts). */
  overlappingRanges: boolean;
  /** "lowest-free" (Whereabouts parity, default) or "round-robin" (`ipam.allocation_policy`). */
  policy: "lowest-free" | "round-robin";
  datastore: Datastore;
  /** File store directory (`ipam.data_dir`), default /var/lib/cni/ipamkit. */
  dataDir: string;
  /** etcd settings (`etcd_host`, `etcd_username`, `etcd_password`, `etcd_*_file`). */
  etcd: { host?: string; username?: string; password?: string; keyFile?: string; certFile?: string; caCertFile?: string };
  /**
   * Kubernetes settings (`kubernetes.kubeconfig`); `whereaboutsLease` (`ipam.whereabouts_lease`):
   * hold Whereabouts' Lease around each ADD's writes, so that a Whereabouts beside ipamkit never
   * meets an ipamkit claim between its check and its create.
   */
  kubernetes: { kubeconfig?: string; whereaboutsLease?: true | "auto" };
  /** Addresses requested in the config (`runtimeConfig.ips`, `args.cni.ips`), without prefix. */
  requestedIps: string[];
  /**
   * The node-local agent (`agent_socket`, `agent_required`): honoured by the binary before this
   * config is even loaded (see agent-settings.ts); the agent reads `required` only to know whether
   * it is the node's only writer on the network (per-node blocks remember more then).
   */
  agent: { socket?: string; required: boolean };
  /**
   * Per-node blocks (`node_block_size`, `node_name`): each range is served from blocks of `size`
   * addresses claimed by this node. `node` defaults to the host name the dispatcher is given.
   */
  nodeBlocks: { size: number; node?: string } | undefined;
  /**
   * Whereabouts' node slices (`node_slice_size`): the one range is served from this node's slice of
   * prefix `prefix`, which the NodeSlicePool `pool` (`network_name`, else the network's `name`) in
   * the pool namespace assigns it; undefined when off.
   */
  nodeSlices?: { prefix: number; pool: string };
  /**
   * Sticky addresses (`sticky: true`, `sticky_ttl` seconds, default {@link DEFAULT_STICKY_TTL}):
   * a pod reborn under its namespace/name gets its address back; undefined when off.
   */
  sticky?: { keepSeconds: number };
  /** `cni.dev/valid-attachments` for GC. */
  validAttachments: { containerID: string; ifname: string }[] | undefined;
  /** `prevResult` for CHECK (raw). */
  prevResult: unknown;
  /** The flat file that was merged, if any. */
  flatFile: string | undefined;
  /** One line per accepted-but-meaningless key (e.g. `datastore: kubernetes` keys with etcd selected). */
  warnings: string[];
}

/** File access the config loader needs (injected so tests use a map). */
export interface ConfigFs {
  exists(path: string): boolean;
  readText(path: string): string;
  /**
   * Why the file at `path` may not hold node-level settings (not a regular file, owned by another
   * user than root or this process's, writable by group or others, larger than FLAT_FILE_MAX_BYTES),
   * or undefined when it may. Absent: every file may (an in-memory file system in tests).
   */
  untrusted?(path: string): string | undefined;
  /**
   * The node's flat file or its directory (NODE_CONFIGURATION_PATH_ENV in the environment of the
   * process that reads: the runtime's, the agent's), never a network config's. Absent or "": the
   * default locations.
   */
  readonly configurationPath?: string;
}

/** Parsed CNI_ARGS. */
export interface CniArgs {
  podNamespace?: string;
  podName?: string;
  podUid?: string;
  infraContainerId?: string;
  /** `IP=` addresses (comma list), without prefix. */
  ips: string[];
  ignoreUnknown: boolean;
  /** Keys present but not understood. */
  unknown: string[];
}

/** `ipam.sticky_ttl` when unset: seconds a sticky address is kept for its pod after a release. */
export const DEFAULT_STICKY_TTL = 300;
