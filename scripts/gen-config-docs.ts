// Writes docs/configuration.md: every key of the CNI plugin's config and every option of the agent,
// the reconciler and the CLI. Types come from the zod schemas (z.toJSONSchema), descriptions from the
// tables beside them (packages/cni/src/config-keys.ts, scripts/gen-config-docs.flags.ts), and each
// "error when wrong" from running the real validator: the plugin's config loader, the reconciler's
// and the CLI's option checks in-process, the built agent and reconciler for the checks made at
// start-up (gen-config-docs.programs.ts). Run: pnpm docs:config. Checked by
// packages/cni/src/configuration-doc.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, loadIpamConfig } from "../packages/cni/src/config.js";
import {
  DNS_DOCS,
  IPAM_KEY_DOCS,
  type KeyDoc,
  KUBERNETES_DOCS,
  type LoadWith,
  NETCONF_KEY_DOCS,
  netConfWithoutIpam,
  RANGE_ENTRY_DOCS,
  ROUTE_DOCS,
  schemaProperties,
} from "../packages/cni/src/config-keys.js";
import { NODE_KEYS } from "../packages/cni/src/config-node-keys.js";
import { DEFAULT_FLAT_FILE_PATHS, FLAT_FILE_MAX_BYTES, NODE_CONFIGURATION_PATH_ENV } from "../packages/cni/src/config-paths.js";
import { dnsSchema, inlineIpamSchema, kubernetesSchema, rangeEntrySchema, routeSchema } from "../packages/cni/src/config-schema.js";
import { WHEREABOUTS_DIFFERENCES } from "../packages/cni/src/whereabouts-differences.js";
import { chartSection } from "./gen-config-docs.chart.js";
import { cliSection, code, flagTable, header, ROOT, row } from "./gen-config-docs.programs.js";

export const DOC_PATH = join(ROOT, "docs", "configuration.md");
export const REGENERATE = "pnpm docs:config";

// ---- types, from the schemas -------------------------------------------------------------------

type JsonSchema = {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
} & Record<string, unknown>;

function typeOf(s: JsonSchema | undefined): string {
  if (s === undefined || (s.type === undefined && s.enum === undefined)) return "any";
  if (s.enum !== undefined) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (s.type === "array") return `array of ${typeOf(s.items)}`;
  if (s.type === "integer" || s.type === "number") {
    const bounds: string[] = [];
    if (typeof s.minimum === "number") bounds.push(`≥ ${s.minimum}`);
    if (typeof s.exclusiveMinimum === "number") bounds.push(`> ${s.exclusiveMinimum}`);
    if (typeof s.maximum === "number" && s.maximum !== Number.MAX_SAFE_INTEGER) bounds.push(`≤ ${s.maximum}`);
    return [s.type, ...bounds].join(" ");
  }
  if (s.type === "string" && s.pattern !== undefined) return `string matching /${s.pattern}/`;
  return s.type ?? "any";
}

type Schema = Parameters<typeof schemaProperties>[0];
const propertiesOf = (schema: Schema) => schemaProperties(schema) as Record<string, JsonSchema>;

// ---- the plugin's keys, errors from the real loader ------------------------------------------------

const NO_FILES = {
  exists: () => false,
  readText: (path: string) => {
    throw new Error(`no file ${path}`);
  },
};

function load(conf: Record<string, unknown>) {
  return loadIpamConfig(JSON.stringify(conf), { fs: NO_FILES, command: "ADD" });
}
const base = (ipam: Record<string, unknown>) => ({
  cniVersion: "1.1.0",
  name: "net",
  ipam: { type: "ipamkit", range: "10.0.0.0/24", ...ipam },
});
const loadWith: LoadWith = (ipam) => load(base(ipam));

function errorOf(where: string, conf: Record<string, unknown>, bad: unknown): string {
  try {
    load(conf);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return `${code(JSON.stringify(bad))} → code ${error.cniCode}: ${code(error.message.replace(/^\[ipamkit\] \[cni\] /, ""))}`;
  }
  throw new Error(`${where}: the loader accepts the documented bad value ${JSON.stringify(bad)}; pick one it refuses`);
}

function defaultOf(doc: KeyDoc): string {
  if (doc.default === undefined) return "—";
  if (typeof doc.default === "string") return doc.default;
  const value = doc.default(loadWith);
  return code(typeof value === "string" && value !== "" ? value : JSON.stringify(value));
}

type Place = (key: string, doc: KeyDoc) => Record<string, unknown>;

function keyTable(prefix: string, docs: Record<string, KeyDoc>, schema: Schema, place: Place): string[] {
  const props = propertiesOf(schema);
  const schemaKeys = Object.keys(props).sort();
  const docKeys = Object.keys(docs).sort();
  if (JSON.stringify(schemaKeys) !== JSON.stringify(docKeys.filter((k) => props[k] !== undefined)) || docKeys.some((k) => !props[k])) {
    throw new Error(`${prefix}: the schema's keys (${schemaKeys.join(", ")}) and the documented ones (${docKeys.join(", ")}) differ`);
  }
  const lines = header(["key", "type", "default", "Whereabouts", "what it does", "error when wrong"]);
  for (const [key, doc] of Object.entries(docs)) {
    const error = doc.bad === undefined ? "— (any value)" : errorOf(`${prefix}${key}`, place(key, doc), doc.bad);
    lines.push(row([code(`${prefix}${key}`), code(typeOf(props[key])), defaultOf(doc), doc.whereabouts, doc.description, error]));
  }
  return lines;
}

/** Why some keys are the node's (packages/cni/src/config-node-keys.ts, issue 47). */
function nodeLevelSection(): string[] {
  const keys = NODE_KEYS.map((k) => code(`ipam.${k}`)).join(", ");
  const defaults = DEFAULT_FLAT_FILE_PATHS.map((p) => code(p)).join(", ");
  return [
    "### Node-level settings",
    "",
    `A NetworkAttachmentDefinition is a namespaced object that a tenant may be allowed to create, and its \`ipam\` block reaches a binary that runs as root on every node. So the settings that decide what that binary talks to, whom it trusts, where it reads its node's settings and with which credentials it reaches the store belong to the node: ${keys}. They are read only from the node's flat file:`,
    "",
    `- the file that \`${NODE_CONFIGURATION_PATH_ENV}\` names (a file, or a directory holding \`whereabouts.conf\`) when that variable is set in the environment of the container runtime (which passes its environment to the plugin) and of the agent; otherwise the first of ${defaults} that exists. The installer writes \`/etc/cni/net.d/whereabouts.d/whereabouts.conf\` (the chart's default \`cni.confDir\`); with another directory, set \`${NODE_CONFIGURATION_PATH_ENV}\` for the runtime and the agent;`,
    `- it is used only when it is a regular file owned by root (or by the user the plugin runs as) that neither group nor others may write, of at most ${FLAT_FILE_MAX_BYTES} bytes; otherwise the call fails with code 7 naming the file and the reason (the static binary does not route by it).`,
    "",
    "In a network config, each of these keys is:",
    "",
    "- accepted silently when it holds the node's value (a Whereabouts NetworkAttachmentDefinition whose `kubernetes.kubeconfig` or `configuration_path` names the installer's files keeps working);",
    "- ignored, with one warning line on stderr naming the key, when it holds another value;",
    "- refused (code 7) for `kubernetes.kubeconfig` and the `etcd_*` credentials when the node's flat file sets none: ignoring them would put the call on another store.",
    "",
    "`etcd_host` stays a network's setting unless the node's flat file holds etcd credentials: then only the node's `etcd_host` is used (the credentials are never presented to a host a network config names), and a differing one is ignored with a warning.",
    "",
    "`agent_timeout` stays a network's setting: it bounds only that network's own calls, at most 30 s. `RELIABILITY.md` (\"Threat model\") lists what each party can and cannot make ipamkit do, with the test that shows it.",
  ];
}

function pluginSection(): string[] {
  const nested = (key: string, inner: (k: string, d: KeyDoc) => unknown) => (k: string, d: KeyDoc) =>
    base({ ...d.with, [key]: inner(k, d) });
  return [
    "## CNI plugin: the `ipam` block",
    "",
    "The inline `ipam` block of the network config, merged with the Whereabouts flat file (`whereabouts.conf`) when one is found: a key the inline block sets wins; the flat file fills the others, recursing into `kubernetes` and `dns` (`enable_overlapping_ranges` is never taken from it). Keys are read as Whereabouts reads them: a key in another case (`Range`) counts as its own, `null` counts as unset, and an unknown key (`subnet`, `range_stat`) is ignored; each such key, and each key accepted but without effect for this config, prints one warning line on stderr (once per network and process), naming the nearest accepted key. Codes: 1 version, 2 unsupported value, 6 undecodable, 7 invalid (see [troubleshooting](troubleshooting.md)). Where ipamkit answers a config otherwise than Whereabouts, the reason is listed under [Differences from Whereabouts](#differences-from-whereabouts).",
    "",
    ...keyTable("ipam.", IPAM_KEY_DOCS, inlineIpamSchema, (key, doc) => base({ ...doc.with, [key]: doc.bad })),
    "",
    ...nodeLevelSection(),
    "",
    "### `ipam.ipRanges[]` entries",
    "",
    ...keyTable(
      "ipam.ipRanges[].",
      RANGE_ENTRY_DOCS,
      rangeEntrySchema,
      nested("ipRanges", (k, d) => [{ range: "10.0.1.0/24", [k]: d.bad }]),
    ),
    "",
    "### `ipam.routes[]` entries",
    "",
    ...keyTable(
      "ipam.routes[].",
      ROUTE_DOCS,
      routeSchema,
      nested("routes", (k, d) => [{ dst: "0.0.0.0/0", [k]: d.bad }]),
    ),
    "",
    "### `ipam.dns`",
    "",
    ...keyTable(
      "ipam.dns.",
      DNS_DOCS,
      dnsSchema,
      nested("dns", (k, d) => ({ [k]: d.bad })),
    ),
    "",
    "### `ipam.kubernetes`",
    "",
    ...keyTable(
      "ipam.kubernetes.",
      KUBERNETES_DOCS,
      kubernetesSchema,
      nested("kubernetes", (k, d) => ({ [k]: d.bad })),
    ),
    "",
    "## CNI plugin: network config keys outside `ipam`",
    "",
    "Other top-level keys belong to the main plugin and are passed over.",
    "",
    ...keyTable("", NETCONF_KEY_DOCS, netConfWithoutIpam, (key, doc) => ({ ...base({}), [key]: doc.bad })),
    "",
    ...differencesSection(),
  ];
}

function differencesSection(): string[] {
  const lines = [
    "## Differences from Whereabouts",
    "",
    "Every config Whereabouts v0.9 accepts is accepted and gives the same addresses on an empty pool, but for these deliberate differences, each in the user's favour. The corpus test (`examples/cni-plugin/src/whereabouts-corpus.test.ts`) runs Whereabouts' own documented and tested configs through both binaries and fails on any other difference.",
    "",
  ];
  for (const d of WHEREABOUTS_DIFFERENCES) {
    lines.push(`<a id="difference-${d.id}"></a>**${d.id}** — Whereabouts: ${d.whereabouts} ipamkit: ${d.ipamkit} Why: ${d.why}`, "");
  }
  lines.push(
    "Node slices (`node_slice_size`) work as in Whereabouts v0.8+: the node reads its slice from the NodeSlicePool, allocates in the same per-slice IPPool (`<network_name>-<node>-<slice>`, or `<node>-<slice>`) and takes the same per-pool Lease when Whereabouts is seen; addresses stay unique across nodes through the network's ORIPs. A node with no slice yet fails ADD with code 11 naming the NodeSlicePool; its DEL releases the key from the node's own slice pools. Whereabouts slices IPv4 only (its controller cannot divide an IPv6 range); ipamkit serves IPv6 slices too: create the NodeSlicePool yourself (`spec.range`, `spec.sliceSize`), and ipamkit's reconciler (`--node-slices true`) divides it and assigns the slices. The reconciler's `--node-slices true` also assigns slices to new nodes and frees deleted nodes' idle slices when Whereabouts' node-slice controller is gone.",
  );
  return lines;
}

export async function renderConfigurationDoc(): Promise<string> {
  const emptyDir = mkdtempSync(join(tmpdir(), "ipamkit-doc-"));
  try {
    return [
      "# Configuration reference",
      "",
      `<!-- Generated by scripts/gen-config-docs.ts from the config schemas and the programs; do not edit. Regenerate: ${REGENERATE} -->`,
      "",
      "Every key of the CNI plugin's config, every option of the node-local agent, the reconciler and the `ipamkit` CLI, and every value of the Helm chart: type (from the schema) and default; for the plugin and the programs also the Whereabouts equivalent, and the error each refuses a wrong value with — recorded by running the real validator on the value shown.",
      "",
      ...pluginSection(),
      "",
      "## Node-local agent: `ipamkit-agent`",
      "",
      "`examples/cni-plugin/dist/ipamkit-agent`, run by the agent DaemonSet. A refused option exits 2 with the line shown and the usage.",
      "",
      ...(await flagTable("agent", emptyDir)),
      "",
      "## Reconciler: `examples/cron-reconciler`",
      "",
      "`node dist/main.js [options]`: one pass (`--once`), a cron schedule (default), or a pod-deletion controller (`--watch`); durations are `300ms`, `90s`, `5m`, `1h` or seconds. A refused option exits 2 with the line shown and the usage.",
      "",
      ...(await flagTable("reconciler", emptyDir)),
      "",
      ...chartSection(),
      "",
      ...(await cliSection(emptyDir)),
      "",
    ].join("\n");
  } finally {
    rmSync(emptyDir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(DOC_PATH, await renderConfigurationDoc());
  console.log(`wrote ${DOC_PATH}`);
}
