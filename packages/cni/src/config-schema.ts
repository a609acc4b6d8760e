import { parseCidr, parseIp } from "@ipamkit/core";
import { z } from "zod";

/** CNI network names (libcni `cniValidNameRegex`). */
export const CNI_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
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

const ipString = z.string().refine(accepts(parseIp), { error: "not an IP address" });
const cidrString = z.string().refine(accepts(parseCidr), { error: "not a CIDR (address/prefix)" });
const milliseconds = z.int().nonnegative();

/** One `ipRanges` entry (Whereabouts `RangeConfiguration`, plus an optional per-range `gateway`). */
export const rangeEntrySchema = z.strictObject({
  range: z.string(),
  range_start: z.string().optional(),
  range_end: z.string().optional(),
  exclude: z.array(z.string()).optional(),
  gateway: z.string().optional(),
});

export const routeSchema = z.strictObject({
  dst: cidrString,
  gw: ipString.optional(),
  mtu: z.int().nonnegative().optional(),
  advmss: z.int().nonnegative().optional(),
  priority: z.int().nonnegative().optional(),
  table: z.int().nonnegative().optional(),
  scope: z.int().nonnegative().optional(),
});

export const dnsSchema = z.strictObject({
  nameservers: z.array(ipString).optional(),
  domain: z.string().optional(),
  search: z.array(z.string()).optional(),
  options: z.array(z.string()).optional(),
});

export const kubernetesSchema = z.strictObject({
  kubeconfig: z.string().optional(),
  k8s_api_root: z.string().optional(),
});

/**
 * Every IPAM key ipamkit accepts (the Whereabouts vocabulary plus `data_dir` and `allocation_policy`).
 * Values that are well-typed but unsupported (`node_slice_size`, `datastore: "consul"`…) are checked
 * after parsing so they fail with CNI code 2 rather than 7.
 */
const ipamShape = {
  type: z.string().optional(),
  range: z.string().optional(),
  range_start: z.string().optional(),
  range_end: z.string().optional(),
  exclude: z.array(z.string()).optional(),
  ipRanges: z.array(rangeEntrySchema).optional(),
  gateway: z.string().optional(),
  routes: z.array(routeSchema).optional(),
  dns: dnsSchema.optional(),
  addresses: z.array(z.unknown()).optional(),
  enable_overlapping_ranges: z.boolean().optional(),
  network_name: z
    .string()
    .regex(NETWORK_NAME, { error: "must be empty or a lowercase DNS-1123 label fragment (a-z, 0-9, '-'; alphanumeric at both ends)" })
    .optional(),
  node_slice_size: z.string().optional(),
  leader_lease_duration: milliseconds.optional(),
  leader_renew_deadline: milliseconds.optional(),
  leader_retry_period: milliseconds.optional(),
  sleep_for_race: z.int().nonnegative().optional(),
  reconciler_cron_expression: z.string().optional(),
  log_file: z.string().optional(),
  log_level: z.string().optional(),
  kubernetes: kubernetesSchema.optional(),
  configuration_path: z.string().optional(),
  datastore: z.string().optional(),
  data_dir: z
    .string()
    .refine((dir) => dir.startsWith("/"), { error: "must be an absolute path" })
    .optional(),
  etcd_host: z.string().optional(),
  etcd_username: z.string().optional(),
  etcd_password: z.string().optional(),
  etcd_key_file: z.string().optional(),
  etcd_cert_file: z.string().optional(),
  etcd_ca_cert_file: z.string().optional(),
  allocation_policy: z.string().optional(),
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
  name: z.string().regex(CNI_NAME, { error: "must start with a letter or digit and contain only letters, digits, '_', '.' and '-'" }),
  type: z.string().optional(),
  ipam: inlineIpamSchema,
  runtimeConfig: z.looseObject({ ips: z.array(z.string()).optional() }).optional(),
  args: z.looseObject({ cni: z.looseObject({ ips: z.array(z.string()).optional() }).optional() }).optional(),
  prevResult: z.unknown().optional(),
  "cni.dev/valid-attachments": z.array(z.looseObject({ containerID: z.string().min(1), ifname: z.string().min(1) })).optional(),
  cniVersions: z.array(z.string()).optional(),
  disableGC: z.boolean().optional(),
  disableCheck: z.boolean().optional(),
});
export type NetConfInput = z.infer<typeof netConfSchema>;
