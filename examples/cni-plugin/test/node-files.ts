import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NODE_CONFIGURATION_PATH_ENV } from "@ipamkit/cni";

/**
 * Writes the node's flat file `<dir>/whereabouts.conf` (this user's, mode 0644: what the installer
 * writes) and returns the environment that names it, as a node's runtime and agent would have it.
 * Node-level keys (agent_socket, agent_required, agent_uid, store credentials) go here, never into
 * a test's network config: the binary and the loader read them only from this file.
 */
export function nodeFlatFile(dir: string, keys: Record<string, unknown>): Record<string, string> {
  const path = join(dir, "whereabouts.conf");
  writeFileSync(path, JSON.stringify(keys));
  chmodSync(path, 0o644);
  return { [NODE_CONFIGURATION_PATH_ENV]: dir };
}
