import { parseCidr, parseIp } from "@ipamkit/core";
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

// zod/mini: the tree-shakable build of zod (a CNI binary parses its bundle on every call). Its
// messages come from the English locale, as with classic zod.
// A CNI call parses one config per process: skip zod's JIT compilation of object parsers.
z.config({ ...en(), jitless: true });

/** CNI network names (libcni `cniValidNameRegex`). */
export const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** `node_name`: a Kubernetes node name or host name (it becomes the owner of the node's blocks). */
export const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$/;
/** `network_name`: a lowercase DNS-1123 label fragment, or empty for the unnamed network. */
export const NETWORK_NAME = /^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function accepts(parse: (text: string) => unknown): (text: string) => boolean {
  return (text) => {
    try {
      parse(text);
      return true;
    } catch {
      return false;
    }
  };
}

const opt = z.optional;
const str = () => z.string();
const strings = () => z.array(z.string());
const nonNegativeInt = () => z.int().check(z.nonnegative());
const ipString = z.string().check(z.refine(accepts(parseIp), { error: "not an IP address" }));
const cidrString = z.string().check(z.refine(accepts(parseCidr), { error: "not a CIDR (address/prefix)" }));

/** One `ipRanges` entry (Whereabouts `RangeConfiguration`, plus an optional per-range `gateway`). */
export const rangeEntrySchema = z.strictObject({
  range: str(),
  range_start: opt(str()),
  range_end: opt(str()),
  exclude: opt(strings()),
  gateway: opt(str()),
});

export const routeSchema = z.strictObject({
  dst: cidrString,
  gw: opt(ipString),
  mtu: opt(nonNegativeInt()),
  advmss: opt(nonNegativeInt()),
  priority: opt(nonNegativeInt()),
  table: opt(nonNegativeInt()),
  scope: opt(nonNegativeInt()),
});

export const dnsSchema = z.strictObject({
  // any text, as Whereabouts copies it (a host name gets a warning: resolv.conf wants addresses)
  nameservers: opt(strings()),
  domain: opt(str()),
  search: opt(strings()),
  options: opt(strings()),
});

/** A static address Whereabouts appends to the result (`addresses`, as the static IPAM plugin). */
export const addressSchema = z.strictObject({
  address: str(),
  gateway: opt(str()),
});

export const kubernetesSchema = z.strictObject({
  kubeconfig: opt(str()),
  k8s_api_root: opt(str()),
});

/**
 * Every IPAM key ipamkit accepts (the Whereabouts vocabulary plus `data_dir` and `allocation_policy`).
 * Values that are well-typed but unsupported (`node_slice_size`, `datastore: "consul"`…) are checked
 * after parsing so they fail with CNI code 2 rather than 7.
 */
const ipamShape = {
  type: opt(str()),
  range: opt(str()),
  range_start: opt(str()),
  range_end: opt(str()),
  exclude: opt(strings()),
  ipRanges: opt(z.array(rangeEntrySchema)),
  gateway: opt(str()),
  routes: opt(z.array(routeSchema)),
  dns: opt(dnsSchema),
  addresses: opt(z.array(addressSchema)),
  enable_overlapping_ranges: opt(z.boolean()),
  // checked in config.ts, where the message can suggest the nearest valid name
  network_name: opt(str()),
  node_slice_size: opt(str()),
  leader_lease_duration: opt(nonNegativeInt()),
  leader_renew_deadline: opt(nonNegativeInt()),
  leader_retry_period: opt(nonNegativeInt()),
  sleep_for_race: opt(z.int()),
  reconciler_cron_expression: opt(str()),
  log_file: opt(str()),
  log_level: opt(str()),
  kubernetes: opt(kubernetesSchema),
  configuration_path: opt(str()),
  datastore: opt(str()),
  data_dir: opt(z.string().check(z.refine((dir: string) => dir.startsWith("/"), { error: "must be an absolute path" }))),
  etcd_host: opt(str()),
  etcd_username: opt(str()),
  etcd_password: opt(str()),
  etcd_key_file: opt(str()),
  etcd_cert_file: opt(str()),
  etcd_ca_cert_file: opt(str()),
  allocation_policy: opt(str()),
  node_block_size: opt(z.int().check(z.positive())),
  node_name: opt(
    z
      .string()
      .check(z.regex(NODE_NAME, { error: "must be a node name: letters, digits, '.', '-', '_' (starting with a letter or digit)" })),
  ),
  agent_socket: opt(z.string().check(z.refine((path: string) => path.startsWith("/"), { error: "must be an absolute path" }))),
  agent_required: opt(z.boolean()),
  // seconds (0, 30]: the bound of a call through the agent (agent-settings.ts)
  agent_timeout: opt(z.number().check(z.positive(), z.lte(30))),
  agent_uid: opt(z.int().check(z.nonnegative())),
  // sticky addresses (DESIGN.md of core, "Sticky addresses"): keep seconds, 1 s .. 30 days
  sticky: opt(z.boolean()),
  sticky_ttl: opt(z.int().check(z.positive(), z.lte(2_592_000))),
  // hold Whereabouts' Lease around each ADD's writes (Kubernetes store only; config.ts)
  whereabouts_lease: opt(z.boolean()),
};

/** The flat file and the merged result: any key may be absent. Unknown keys are rejected. */
export const ipamSchema = z.strictObject(ipamShape);
export type IpamInput = z.infer<typeof ipamSchema>;

/** The inline `ipam` block: as above, and `type` must name this plugin. */
export const inlineIpamSchema = z.strictObject({
  ...ipamShape,
  type: z.enum(["ipamkit", "whereabouts"], { error: 'must be "ipamkit" or "whereabouts"' }),
});

/** The whole network config as the IPAM plugin receives it. Unknown top-level keys belong to the main plugin. */
export const netConfSchema = z.looseObject({
  cniVersion: z.string(),
  name: z
    .string()
    .check(z.regex(CNI_NAME, { error: "must start with a letter or digit and contain only letters, digits, '_', '.' and '-'" })),
  type: opt(str()),
  ipam: inlineIpamSchema,
  runtimeConfig: opt(z.looseObject({ ips: opt(strings()) })),
  args: opt(z.looseObject({ cni: opt(z.looseObject({ ips: opt(strings()) })) })),
  prevResult: opt(z.unknown()),
  "cni.dev/valid-attachments": opt(
    z.array(z.looseObject({ containerID: z.string().check(z.minLength(1)), ifname: z.string().check(z.minLength(1)) })),
  ),
  cniVersions: opt(strings()),
  disableGC: opt(z.boolean()),
  disableCheck: opt(z.boolean()),
});
export type NetConfInput = z.infer<typeof netConfSchema>;
