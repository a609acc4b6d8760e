import type { ConfigFs } from "./types.js";

// Where the node's flat file is. No imports beyond types: the binary's forwarding path reads
// `agent_socket` from the flat file before it loads anything else (agent-settings.ts).
//
// The flat file holds node-level settings (the agent's socket and trusted uid, the store's
// credentials): its location is the node's too. A network config's `ipam.configuration_path` is
// written by whoever may create a NetworkAttachmentDefinition, so it is never followed
// (config-node-keys.ts warns about it); the node names its file with NODE_CONFIGURATION_PATH_ENV in
// the environment of the runtime and of the agent, or keeps it at a default location.

/** Whereabouts' default flat-file locations (and the agent container's view of the host's). */
export const DEFAULT_FLAT_FILE_PATHS = [
  "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf",
  "/etc/cni/net.d/whereabouts.d/whereabouts.conf",
  "/host/etc/cni/net.d/whereabouts.d/whereabouts.conf",
] as const;

export const FLAT_FILE_NAME = "whereabouts.conf";

/** A flat file larger than this is not read for node-level settings (it holds a few keys). */
export const FLAT_FILE_MAX_BYTES = 1024 * 1024;

/**
 * The environment variable that names the node's flat file (or its directory), as
 * `configuration_path` does in Whereabouts: set by the node's admin for the runtime (which passes
 * its environment to the plugin) and for the agent; when set, the defaults are not searched.
 */
export const NODE_CONFIGURATION_PATH_ENV = "IPAMKIT_CONFIGURATION_PATH";

/**
 * The file a configuration path designates: the path itself when it names a file (`….conf`,
 * `….json`), otherwise `<path>/whereabouts.conf` (the installer sets it to the `whereabouts.d` directory).
 */
export function configurationPathFile(configurationPath: string): string {
  if (/\.(conf|json)$/.test(configurationPath)) return configurationPath;
  return `${configurationPath.replace(/\/+$/, "")}/${FLAT_FILE_NAME}`;
}

/** The search order: the node's configuration path alone when set, else the defaults. */
export function flatFileCandidates(nodeConfigurationPath: string | undefined): string[] {
  if (nodeConfigurationPath !== undefined && nodeConfigurationPath !== "") return [configurationPathFile(nodeConfigurationPath)];
  return [...DEFAULT_FLAT_FILE_PATHS];
}

/** The node's flat file: the first candidate that exists, or undefined (a missing flat file is not an error). */
export function findFlatFile(fs: ConfigFs, nodeConfigurationPath: string | undefined): string | undefined {
  return flatFileCandidates(nodeConfigurationPath).find((path) => fs.exists(path));
}
