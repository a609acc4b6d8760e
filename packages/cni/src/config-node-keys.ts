import { NODE_AGENT_KEYS } from "./agent-settings.js";
import { configError } from "./config-errors.js";
import { configurationPathFile, flatFileCandidates } from "./config-paths.js";
import type { ConfigFs } from "./types.js";

// Node-level settings (DESIGN.md, "A network config is not root's"): what root's binary talks to,
// trusts and reads with its credentials is the node's to decide. A network config (a
// NetworkAttachmentDefinition anyone allowed in a namespace may write) that sets one of these keys
// has it removed before the flat file is merged in: the same value as the node's says nothing and
// is dropped silently; another is ignored with one warning line; a store credential that the node
// does not set at all is refused (ignoring it would put the call on another store), but for etcd
// credentials where the store is the node's Kubernetes anyway (Whereabouts drops them too).

/** Agent routing and the flat file's location: ignored with a warning when the network config sets another value. */
const IGNORED = [...NODE_AGENT_KEYS, "configuration_path"] as const;
/** Store credentials: ignored with a warning when the node sets another value, refused when the node sets none. */
const CREDENTIALS = [
  "kubernetes.kubeconfig",
  "etcd_username",
  "etcd_password",
  "etcd_key_file",
  "etcd_cert_file",
  "etcd_ca_cert_file",
] as const;

/** Every node-level key of the `ipam` block, as a dotted path (docs, tests). */
export const NODE_KEYS: readonly string[] = [...IGNORED, ...CREDENTIALS];

/**
 * `etcd_host` is the network's own choice, except when the node holds etcd credentials: then only
 * the node's host is used (a network config naming another would have the node's password or
 * client certificate presented to a server of its choosing), and a differing one is ignored with a warning.
 */
const ETCD_SECRETS = CREDENTIALS.filter((key) => key.startsWith("etcd_"));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function get(object: Record<string, unknown>, path: string): unknown {
  let at: unknown = object;
  for (const part of path.split(".")) {
    if (!isObject(at) || !Object.hasOwn(at, part)) return undefined;
    at = at[part];
  }
  return at;
}

/** A copy of `object` without `path` (parents copied, never mutated). */
function without(object: Record<string, unknown>, path: string): Record<string, unknown> {
  const [head, ...rest] = path.split(".") as [string, ...string[]];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    if (key !== head) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else if (rest.length > 0 && isObject(value))
      Object.defineProperty(out, key, { value: without(value, rest.join(".")), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** True when the store will be Kubernetes as in Whereabouts: type "whereabouts" and a kubeconfig from the node. */
function kubernetesAsWhereabouts(inline: Record<string, unknown>, node: Record<string, unknown>): boolean {
  const type = inline.type ?? node.type;
  const kubeconfig = get(node, "kubernetes.kubeconfig");
  return type === "whereabouts" && typeof kubeconfig === "string" && kubeconfig !== "";
}

/** Where the node's flat file is, for messages. */
function nodeFileText(fs: ConfigFs, flatPath: string | undefined): string {
  if (flatPath !== undefined) return `the node's flat file ${flatPath}`;
  return `no node flat file (looked at ${flatFileCandidates(fs.configurationPath).join(", ")})`;
}

/**
 * The inline `ipam` block without its node-level keys, each one that differs from the node's value
 * named in `warnings`. `flat` is the node's flat file (undefined: none).
 */
export function withoutNodeKeys(
  inline: Record<string, unknown>,
  flat: { path: string; raw: Record<string, unknown> } | undefined,
  { fs, warnings }: { fs: ConfigFs; warnings: string[] },
): Record<string, unknown> {
  let out = inline;
  const node = flat?.raw ?? {};
  const where = nodeFileText(fs, flat?.path);
  if (inline.etcd_host !== undefined && ETCD_SECRETS.some((key) => node[key] !== undefined) && inline.etcd_host !== node.etcd_host) {
    out = without(out, "etcd_host");
    warnings.push(
      `ipam.etcd_host is ignored in this network config: ${where} holds etcd credentials, which are presented only to its etcd_host${node.etcd_host === undefined ? " (it sets none)" : ""}`,
    );
  }
  for (const key of NODE_KEYS) {
    const value = get(inline, key);
    if (value === undefined) continue;
    out = without(out, key);
    const nodeValue = get(node, key);
    if (key === "configuration_path") {
      if (value === "" || (typeof value === "string" && configurationPathFile(value) === flat?.path)) continue;
      warnings.push(
        `ipam.configuration_path is a node-level setting and is ignored in a network config: ${where} is used (the node names it with IPAMKIT_CONFIGURATION_PATH)`,
      );
      continue;
    }
    if (value === "" || JSON.stringify(value) === JSON.stringify(nodeValue)) continue;
    const isCredential = (CREDENTIALS as readonly string[]).includes(key);
    if (isCredential && nodeValue === undefined && key.startsWith("etcd_") && kubernetesAsWhereabouts(inline, node)) {
      // Whereabouts v0.6+ has no etcd store and drops these keys; with type "whereabouts" and the
      // node's kubeconfig the store is Kubernetes whatever the network config says (chooseDatastore)
      warnings.push(
        `ipam.${key} is ignored: the store is the node's Kubernetes (type "whereabouts" with its kubeconfig), as in Whereabouts`,
      );
      continue;
    }
    if (isCredential && nodeValue === undefined) {
      throw configError(
        7,
        `ipam.${key}`,
        value,
        `is a node-level setting: a network config may not choose the store's credentials, and ${where} sets none; set it in the node's flat file (the installer writes it)`,
      );
    }
    warnings.push(
      `ipam.${key} is a node-level setting and is ignored in a network config: ${nodeValue === undefined ? `${where} sets none` : `${where} sets another value, which is used`}`,
    );
  }
  return out;
}
