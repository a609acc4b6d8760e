import { existsSync, readFileSync, statSync } from "node:fs";
import { FLAT_FILE_MAX_BYTES, NODE_CONFIGURATION_PATH_ENV } from "./config-paths.js";
import type { ConfigFs } from "./types.js";

/**
 * The host's files as the plugin and the agent read them: the node's configuration path from this
 * process's environment (never from a call's), and a flat file trusted only as the native binary
 * trusts it (examples/cni-plugin/src/forwarder-route.h): a regular file owned by root or by this
 * process's user, not writable by group or others, at most FLAT_FILE_MAX_BYTES.
 *
 * `env` and `euid` are the reading process's own (`process.env`, `process.geteuid()`): the edge
 * passes them, as it passes everything else (DESIGN.md, "I/O is injected").
 */
export function hostConfigFs({ env, euid }: { env: Readonly<Record<string, string | undefined>>; euid: number }): ConfigFs {
  const configurationPath = env[NODE_CONFIGURATION_PATH_ENV];
  return {
    exists: existsSync,
    readText: (path) => readFileSync(path, "utf8"),
    untrusted: (path) => untrustedReason(path, euid),
    ...(configurationPath === undefined || configurationPath === "" ? {} : { configurationPath }),
  };
}

function untrustedReason(path: string, uid: number): string | undefined {
  const st = statSync(path);
  if (!st.isFile()) return "it is not a regular file";
  if (st.uid !== 0 && st.uid !== uid) return `it is owned by uid ${st.uid}, neither root nor this process's user`;
  if ((st.mode & 0o022) !== 0) return `group or others may write it (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")})`;
  if (st.size > FLAT_FILE_MAX_BYTES) return `it is larger than ${FLAT_FILE_MAX_BYTES} bytes`;
  return undefined;
}
