import { CNI_CODES, CniError } from "./errors.js";
import { type CniCommand, type CniVersion, SUPPORTED_VERSIONS } from "./types.js";

const VERSION_TEXT = /^\d+(?:\.\d+){0,2}$/;

/**
 * Numeric compare of `x.y.z` versions (missing parts count as 0, so `1.0` equals `1.0.0`).
 * Negative when `a` is older, positive when newer, 0 when equal. A text that is not `x[.y[.z]]`
 * is rejected with code 1 (incompatible version), naming it.
 */
export function compareVersions(a: string, b: string): number {
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < 3; i += 1) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** True for the exact version texts this plugin speaks ({@link SUPPORTED_VERSIONS}). */
export function isSupported(v: string): v is CniVersion {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** VERSION output: advertises exactly {@link SUPPORTED_VERSIONS} (0.1.0 to 1.1.0, as Whereabouts). */
export function versionResult(cniVersion: string): { cniVersion: string; supportedVersions: string[] } {
  return { cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] };
}

/** Oldest config `cniVersion` at which each command is dispatched (as skel: CHECK 0.4.0, GC and STATUS 1.1.0). */
export function minimumVersionFor(command: CniCommand): CniVersion {
  switch (command) {
    case "CHECK":
      return "0.4.0";
    case "GC":
    case "STATUS":
      return "1.1.0";
    default:
      return "0.1.0";
  }
}

/** Whether `command` may run under a config of `cniVersion` (otherwise the caller answers code 1). */
export function commandAllowed(command: CniCommand, cniVersion: CniVersion): boolean {
  return compareVersions(cniVersion, minimumVersionFor(command)) >= 0;
}

function parts(version: string): number[] {
  if (typeof version !== "string" || !VERSION_TEXT.test(version)) {
    throw new CniError(CNI_CODES.INCOMPATIBLE_VERSION, `invalid CNI version ${JSON.stringify(version)}: expected x.y.z`);
  }
  return version.split(".").map(Number);
}
