import type { ConfigFs } from "./types.js";

// Where the flat file is looked for. No imports beyond types: the binary's forwarding path reads
// `agent_socket` from the flat file before it loads anything else (agent-settings.ts).

/** Whereabouts' default flat-file locations, searched after `ipam.configuration_path`. */
export const DEFAULT_FLAT_FILE_PATHS = [
  "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf",
  "/etc/cni/net.d/whereabouts.d/whereabouts.conf",
  "/host/etc/cni/net.d/whereabouts.d/whereabouts.conf",
] as const;

export const FLAT_FILE_NAME = "whereabouts.conf";

/**
 * The file `ipam.configuration_path` designates: the path itself when it names a file (`….conf`,
 * `….json`), otherwise `<path>/whereabouts.conf` (the installer sets it to the `whereabouts.d` directory).
 */
export function configurationPathFile(configurationPath: string): string {
  if (/\.(conf|json)$/.test(configurationPath)) return configurationPath;
  return `${configurationPath.replace(/\/+$/, "")}/${FLAT_FILE_NAME}`;
}

/** The search order: `ipam.configuration_path` (when set), then the defaults. */
export function flatFileCandidates(configurationPath: string | undefined): string[] {
  const first = configurationPath === undefined || configurationPath === "" ? [] : [configurationPathFile(configurationPath)];
  return [...first, ...DEFAULT_FLAT_FILE_PATHS];
}

/** The first candidate that exists, or undefined (a missing flat file is not an error). */
export function findFlatFile(fs: ConfigFs, configurationPath: string | undefined): string | undefined {
  return flatFileCandidates(configurationPath).find((path) => fs.exists(path));
}
