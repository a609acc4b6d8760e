import * as z from "zod/mini";
import { AGENT_TIMEOUT_DEFAULT_SECONDS } from "./agent-settings.js";
import { DEFAULT_FLAT_FILE_PATHS } from "./config-paths.js";
import type { dnsSchema, IpamInput, kubernetesSchema, NetConfInput, rangeEntrySchema, routeSchema } from "./config-schema.js";
import { netConfSchema } from "./config-schema.js";
import type { IpamConfig } from "./types.js";

// The documentation of every config key, beside the schema (config-schema.ts) it documents. Not
// part of the plugin: scripts/gen-config-docs.ts renders it into docs/configuration.md, taking each
// key's type from the schema and each "error when wrong" from running the real loader on `bad`.
// The mapped types below make a key added to the schema without its entry here fail typecheck.

/** Loads `{ cniVersion, name, ipam: { type, range: "10.0.0.0/24", ...ipam } }` with the real loader. */
export type LoadWith = (ipam: Record<string, unknown>) => IpamConfig;

export interface KeyDoc {
  /** What the key does, one or two sentences (Markdown). */
  description: string;
  /** The default: Markdown, or read off the real loader's result for a config without the key. */
  default?: string | ((load: LoadWith) => unknown);
  /** The Whereabouts key or behaviour it corresponds to (Markdown); "—" when none. */
  whereabouts: string;
  /** A wrong value; the generator records the loader's error for it (and fails when there is none). */
  bad: unknown;
  /** Other `ipam` keys set beside `bad`, when the error needs them. */
  with?: Record<string, unknown>;
}

type Docs<T> = { [K in keyof Required<T>]: KeyDoc };
type Of<S extends { _zod: { output: unknown } }> = S["_zod"]["output"];

const same = "same key, same meaning";
/** Node-level keys (config-node-keys.ts): why in docs/configuration.md, "Node-level settings". */
const NODE_AGENT = "**Node-level**: only the node's flat file sets it; in a network config it is ignored, with a warning.";
const NODE_CREDENTIAL =
  "**Node-level**: only the node's flat file sets it; a network config's value is ignored with a warning when it differs, refused (code 7) when the node sets none.";
const dropped = "accepted and dropped";

export const IPAM_KEY_DOCS: Docs<IpamInput> = {
  type: { description: "The IPAM plugin's name.", default: "required", whereabouts: '`"whereabouts"` (accepted too)', bad: "host-local" },
  range: {
    description: "A CIDR, or `first-last/prefix`; the first range of the result.",
    default: "one of `range`, `ipRanges` required",
    whereabouts: same,
    bad: "10.0.0.0/33",
  },
  range_start: {
    description:
      "First address handed out from `range`; one outside the usable span, or unreadable, is ignored with a warning (as Whereabouts ignores it).",
    default: "the first usable address",
    whereabouts: "same",
    bad: 5,
  },
  range_end: {
    description:
      "Last address handed out from `range` (inclusive); one outside the usable span or below the start is ignored with a warning (as Whereabouts ignores it).",
    default: "the last usable address",
    whereabouts: "same",
    bad: 5,
  },
  exclude: {
    description: "CIDRs or addresses of `range` never handed out; one outside the range is ignored with a warning.",
    default: "`[]`",
    whereabouts: "same; an unreadable entry is refused here, fails every ADD there",
    bad: ["10.0.0.0/99"],
  },
  ipRanges: {
    description: "More ranges, one address each (dual stack, multi-IP); an ADD takes all or none. Keys: below.",
    default: "`[]`",
    whereabouts: same,
    bad: "10.0.1.0/24",
  },
  gateway: {
    description:
      "Gateway in the result of every range of its family that sets none; it may lie outside the range. Inside it, it is never handed out.",
    default: "none",
    whereabouts: "same, but Whereabouts hands it out and attaches it to both families",
    bad: "nope",
  },
  routes: { description: "Routes copied into the result. Keys: below.", default: "`[]`", whereabouts: same, bad: { dst: "0.0.0.0/0" } },
  dns: { description: "DNS settings copied into the result. Keys: below.", default: "none", whereabouts: same, bad: ["10.0.0.53"] },
  addresses: {
    description: 'Static addresses (`{address: "10.10.0.5/24", gateway?}`) appended to every result, never reserved in a pool.',
    default: "`[]`",
    whereabouts: same,
    bad: [{ address: "10.0.0.5" }],
  },
  enable_overlapping_ranges: {
    description: "One owner per address across pools whose ranges overlap (claims). Only the inline value counts.",
    default: (load) => load({}).overlappingRanges,
    whereabouts: "same (OverlappingRangeIPReservation)",
    bad: "yes",
  },
  network_name: {
    description: "Separates pools of the same CIDR; prefixes pool and claim names.",
    default: (load) => load({}).networkName,
    whereabouts: "same, but not validated there",
    bad: "Blue",
  },
  node_slice_size: {
    description:
      "Whereabouts' node slices (`/N` or `N`): the node allocates in its slice of the one range, which the NodeSlicePool `network_name` (else the network's `name`) assigns it, in Whereabouts' per-slice IPPool; results carry the range's prefix. Kubernetes store only; IPv4 and IPv6. The node's name: `NODENAME`, the agent's `--node-name`, `<configuration path>/nodename`, `/etc/hostname`.",
    default: "off",
    whereabouts: "Fast IPAM: the same slices and pools (its node-slice controller assigns them; IPv4 only)",
    bad: "/x",
  },
  leader_lease_duration: {
    description: "Accepted, unused (a warning): no Lease is taken.",
    whereabouts: "Lease duration, 1500 ms",
    bad: -1,
  },
  leader_renew_deadline: { description: "Accepted, unused (a warning).", whereabouts: "renew deadline, 1000 ms", bad: -1 },
  leader_retry_period: { description: "Accepted, unused (a warning).", whereabouts: "retry period, 500 ms", bad: -1 },
  sleep_for_race: {
    description: "Accepted, unused (a warning when not 0).",
    default: "0",
    whereabouts: "race-reproduction pause, s",
    bad: "5",
  },
  reconciler_cron_expression: {
    description:
      "Accepted, unused by the plugin (a warning); the reconciler takes `--schedule` or `--schedule-file` (the chart: `reconciler.schedule`, through its ConfigMap and `--schedule-file`).",
    whereabouts: "reconciler schedule when /cron-schedule/config is absent",
    bad: 5,
  },
  log_file: { description: "Accepted, unused (a warning): the plugin logs to stderr.", whereabouts: "log file", bad: 5 },
  log_level: { description: "Accepted, unused (a warning).", whereabouts: "log level, `debug`", bad: 5 },
  kubernetes: { description: "The Kubernetes store's settings. Keys: below.", default: "none", whereabouts: same, bad: "kubeconfig" },
  configuration_path: {
    description:
      "**Node-level**: ignored in a network config, with a warning. The node names its flat file (or its directory) with `IPAMKIT_CONFIGURATION_PATH` in the runtime's and the agent's environment.",
    default: `${DEFAULT_FLAT_FILE_PATHS.map((p) => `\`${p}\``).join(", ")}, the first that exists`,
    whereabouts: "read from the NAD there; a missing flat file is no error here",
    bad: 5,
  },
  datastore: {
    description: "Store: `file`, `etcd` or `kubernetes`.",
    default: "`kubernetes` with a kubeconfig, else `etcd` with `etcd_host`, else `file`",
    whereabouts: "accepted and dropped (Kubernetes only)",
    bad: "consul",
  },
  data_dir: {
    description: "The file store's directory (absolute).",
    default: (load) => load({}).dataDir,
    whereabouts: "—",
    bad: "var/lib/ipamkit",
  },
  etcd_host: {
    description: "etcd client URLs, comma-separated.",
    default: "required with `datastore: etcd`",
    whereabouts: `${dropped} since v0.6`,
    bad: "",
    with: { datastore: "etcd" },
  },
  etcd_username: { description: `etcd user. ${NODE_CREDENTIAL}`, default: "none", whereabouts: `${dropped} since v0.6`, bad: 5 },
  etcd_password: {
    description: `etcd password; never printed. ${NODE_CREDENTIAL}`,
    default: "none",
    whereabouts: `${dropped} since v0.6`,
    bad: 5,
  },
  etcd_key_file: {
    description: `etcd TLS client key file. ${NODE_CREDENTIAL}`,
    default: "none",
    whereabouts: `${dropped} since v0.6`,
    bad: 5,
  },
  etcd_cert_file: {
    description: `etcd TLS client certificate file. ${NODE_CREDENTIAL}`,
    default: "none",
    whereabouts: `${dropped} since v0.6`,
    bad: 5,
  },
  etcd_ca_cert_file: { description: `etcd TLS CA file. ${NODE_CREDENTIAL}`, default: "none", whereabouts: `${dropped} since v0.6`, bad: 5 },
  allocation_policy: {
    description: "`lowest-free` or `round-robin`.",
    default: (load) => load({}).policy,
    whereabouts: "— (always lowest free)",
    bad: "random",
  },
  node_block_size: {
    description: "Per-node blocks of this many addresses (a power of two ≥ 4), claimed on demand; no controller.",
    default: "off",
    whereabouts: "`node_slice_size` (different mechanism)",
    bad: 3,
  },
  node_name: {
    description: "Owner of this node's blocks.",
    default: "the host name (the agent's `--node-name`)",
    whereabouts: "`NODENAME` / the `nodename` file",
    bad: "node 1",
  },
  agent_socket: {
    description: `The node-local agent's Unix socket; the binary forwards calls there. ${NODE_AGENT}`,
    default: "none (direct mode)",
    whereabouts: "—",
    bad: "run/ipamkit.sock",
  },
  agent_required: {
    description: `Fail the call when the agent cannot answer, instead of running it in-process. ${NODE_AGENT}`,
    default: (load) => load({}).agent.required,
    whereabouts: "—",
    bad: "yes",
  },
  agent_timeout: {
    description: "Bound of a call through the agent, seconds.",
    default: () => AGENT_TIMEOUT_DEFAULT_SECONDS,
    whereabouts: "—",
    bad: 60,
  },
  agent_uid: {
    description: `Besides root, the uid the agent may run as (checked on the socket's peer). ${NODE_AGENT}`,
    default: "root only",
    whereabouts: "—",
    bad: -1,
  },
  agent_journal_dir: {
    description: `Where the binary journals a DEL that no agent answered (with \`agent_required\`, or without Node on the host), answering it with success; the agent replays the journal when it starts ([operation](operate.md#when-the-agent-is-down-the-del-journal)). The chart sets \`/var/lib/ipamkit/journal\` (\`agent.journalDir\`). ${NODE_AGENT}`,
    default: "none (such a DEL answers code 11)",
    whereabouts: "—",
    bad: "var/lib/ipamkit/journal",
  },
  sticky: {
    description: "A pod reborn under the same namespace/name gets its address back.",
    default: "`false`",
    whereabouts: "— (PR #742, open)",
    bad: true,
    with: { node_block_size: 16 },
  },
  sticky_ttl: {
    description: "Seconds a sticky address is kept after its pod's release.",
    default: (load) => load({ sticky: true }).sticky?.keepSeconds,
    whereabouts: "—",
    bad: 0,
  },
  whereabouts_lease: {
    description:
      "Hold Whereabouts' `whereabouts` Lease around each ADD's writes: `true` always, `false` never; unset, only while Whereabouts was seen writing that Lease in the last hour (one read of the Lease per ADD; Kubernetes store, not with `node_block_size`).",
    default: "unset (auto)",
    whereabouts: "its per-operation leader election",
    bad: true,
  },
};

export const RANGE_ENTRY_DOCS: Docs<Of<typeof rangeEntrySchema>> = {
  range: { description: "A CIDR, or `first-last/prefix`.", default: "required", whereabouts: same, bad: "10.0.1.0" },
  range_start: {
    description: "First address handed out; outside the usable span, ignored with a warning.",
    default: "the first usable address",
    whereabouts: "same (an unreadable one is refused by both)",
    bad: "010.0.1.5",
  },
  range_end: {
    description: "Last address handed out; outside the usable span or below the start, ignored with a warning.",
    default: "the last usable address",
    whereabouts: "same (an unreadable one is refused by both)",
    bad: "10.0.1.300",
  },
  exclude: { description: "CIDRs or addresses never handed out.", default: "`[]`", whereabouts: same, bad: ["x"] },
  gateway: {
    description: "This range's gateway (wins over `ipam.gateway`); of the range's family.",
    default: "`ipam.gateway`",
    whereabouts: "— (one top-level gateway)",
    bad: "fd00::1",
  },
};

export const ROUTE_DOCS: Docs<Of<typeof routeSchema>> = {
  dst: { description: "Destination CIDR.", default: "required", whereabouts: same, bad: "default" },
  gw: { description: "Next hop.", default: "none", whereabouts: same, bad: "x" },
  mtu: { description: "Route MTU (CNI 1.1).", default: "none", whereabouts: "—", bad: -1 },
  advmss: { description: "Advertised MSS (CNI 1.1).", default: "none", whereabouts: "—", bad: 1.5 },
  priority: { description: "Route priority (CNI 1.1).", default: "none", whereabouts: "—", bad: "high" },
  table: { description: "Routing table (CNI 1.1).", default: "none", whereabouts: "—", bad: -1 },
  scope: { description: "Route scope (CNI 1.1).", default: "none", whereabouts: "—", bad: -1 },
};

export const DNS_DOCS: Docs<Of<typeof dnsSchema>> = {
  nameservers: {
    description: "Name servers (a host name is passed on with a warning).",
    default: "none",
    whereabouts: same,
    bad: "10.0.0.53",
  },
  domain: { description: "Local domain.", default: "none", whereabouts: same, bad: 5 },
  search: { description: "Search domains.", default: "none", whereabouts: same, bad: "example.com" },
  options: { description: "Resolver options.", default: "none", whereabouts: same, bad: "ndots:2" },
};

export const KUBERNETES_DOCS: Docs<Of<typeof kubernetesSchema>> = {
  kubeconfig: {
    description: `Kubeconfig of the Kubernetes store; its context's namespace holds the pools. Re-read on every call. ${NODE_CREDENTIAL}`,
    default: "required with `datastore: kubernetes`",
    whereabouts: same,
    bad: "",
    with: { datastore: "kubernetes" },
  },
  k8s_api_root: { description: "Accepted, unused (a warning).", whereabouts: "accepted, never used", bad: 5 },
};

/** Network-config keys outside `ipam` that the plugin reads (the rest belong to the main plugin). */
export const NETCONF_KEY_DOCS: Omit<Docs<NetConfInput>, "ipam"> = {
  cniVersion: { description: "CNI version of the config: 0.1.0 to 1.1.0.", default: "required", whereabouts: same, bad: "0.0.9" },
  name: { description: "Network name (libcni's name rule).", default: "required", whereabouts: same, bad: "my net" },
  type: { description: "The main plugin (not read).", whereabouts: same, bad: 5 },
  runtimeConfig: {
    description: "`ips`: addresses the runtime asks for.",
    default: "none",
    whereabouts: same,
    bad: { ips: ["10.0.0.5/40"] },
  },
  args: { description: "`cni.ips`: addresses asked for in the config.", default: "none", whereabouts: same, bad: { cni: { ips: ["x"] } } },
  prevResult: { description: "The result CHECK verifies.", default: "none", whereabouts: same, bad: undefined },
  "cni.dev/valid-attachments": {
    description: "GC: the attachments still alive; every other reservation of the network is released.",
    default: "required for GC",
    whereabouts: "— (no GC)",
    bad: [{ containerID: "", ifname: "eth0" }],
  },
  cniVersions: { description: "Versions of a conflist (not read).", whereabouts: "—", bad: "1.1.0" },
  disableGC: { description: "Conflist switch (not read by the plugin).", whereabouts: "—", bad: "yes" },
  disableCheck: { description: "Conflist switch (not read by the plugin).", whereabouts: "—", bad: "yes" },
};

/** A schema's properties as JSON Schema (zod 4's z.toJSONSchema): the documented types. */
export function schemaProperties(schema: z.core.$ZodType): Record<string, Record<string, unknown>> {
  const json = z.toJSONSchema(schema, { unrepresentable: "any", io: "input" }) as { properties?: Record<string, Record<string, unknown>> };
  return json.properties ?? {};
}

/** The network config's own keys, `ipam` aside (it has its own tables). */
export const netConfWithoutIpam = z.omit(netConfSchema, { ipam: true });
