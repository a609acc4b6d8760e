import { ConfigError, DEFAULT_FLAT_FILE_PATHS, loadIpamConfig } from "@ipamkit/cni";

// `ipamkit preflight`, the NAD half: every NetworkAttachmentDefinition's IPAM config that names
// whereabouts or ipamkit, read by the plugin's own loader as the node would read it (with the flat
// file given), and classified.

/** A NetworkAttachmentDefinition as listed: its name and `spec.config`. */
export interface NadObject {
  metadata?: { name?: string; namespace?: string };
  spec?: { config?: unknown };
}

export type Verdict = "accepted" | "warnings" | "refused";

/** One IPAM config of one NAD (a conflist may hold several). */
export interface NadFinding {
  nad: string;
  /** The plugin within a conflist (`plugins[1]`), or undefined for a plain config. */
  plugin?: string;
  verdict: Verdict;
  /** Warning lines (accepted with warnings), or the one-line refusal naming key, value and fix. */
  lines: string[];
}

const OURS = new Set(["whereabouts", "ipamkit"]);

/** The IPAM configs of a NAD's `spec.config` that ipamkit would serve, as the plugin receives each on stdin. */
function ipamConfigsOf(config: Record<string, unknown>): { plugin?: string; stdin: Record<string, unknown> }[] {
  const isOurs = (c: unknown) =>
    c !== null && typeof c === "object" && OURS.has(String(((c as Record<string, unknown>).ipam as { type?: unknown } | undefined)?.type));
  if (Array.isArray(config.plugins)) {
    // libcni hands each plugin the list's name and cniVersion
    return config.plugins.flatMap((plugin, index) =>
      isOurs(plugin)
        ? [{ plugin: `plugins[${index}]`, stdin: { ...(plugin as object), name: config.name, cniVersion: config.cniVersion } }]
        : [],
    );
  }
  return isOurs(config) ? [{ stdin: config }] : [];
}

/** The loader's file system: the given flat file wherever the node would look for it. */
function flatFs(flat: string | undefined, configurationPath: unknown) {
  const paths = new Set<string>(DEFAULT_FLAT_FILE_PATHS);
  if (typeof configurationPath === "string" && configurationPath !== "") {
    paths.add(configurationPath);
    paths.add(`${configurationPath.replace(/\/+$/, "")}/whereabouts.conf`);
  }
  return {
    exists: (path: string) => flat !== undefined && paths.has(path),
    readText: (path: string) => {
      if (flat === undefined || !paths.has(path)) throw new Error(`ENOENT: ${path}`);
      return flat;
    },
  };
}

/** Classifies every IPAM config of one NAD. A spec.config that is not JSON is refused only when it names whereabouts or ipamkit. */
export function classifyNad(nad: NadObject, flat: string | undefined): NadFinding[] {
  const name = `${nad.metadata?.namespace ?? ""}/${nad.metadata?.name ?? ""}`;
  const text = nad.spec?.config;
  if (typeof text !== "string") return [];
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (error) {
    if (!/"(whereabouts|ipamkit)"/.test(text)) return [];
    return [
      { nad: name, verdict: "refused", lines: [`spec.config is not JSON (${(error as Error).message}): no IPAM plugin can read it`] },
    ];
  }
  if (config === null || typeof config !== "object" || Array.isArray(config)) return [];
  return ipamConfigsOf(config as Record<string, unknown>).map(({ plugin, stdin }) => {
    const at = plugin === undefined ? {} : { plugin };
    const ipam = stdin.ipam as Record<string, unknown>;
    try {
      const loaded = loadIpamConfig(JSON.stringify(stdin), { fs: flatFs(flat, ipam.configuration_path), command: "ADD" });
      const lines = [...loaded.warnings];
      if (flat === undefined && loaded.datastore !== "kubernetes") {
        lines.push(`no flat file given (--flat-file): this reads as datastore "${loaded.datastore}"; the node's whereabouts.conf decides`);
      }
      return { nad: name, ...at, verdict: lines.length === 0 ? "accepted" : "warnings", lines };
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return { nad: name, ...at, verdict: "refused", lines: [error.message.replace(/^\[ipamkit\] \[cni\] /, "")] };
    }
  });
}
