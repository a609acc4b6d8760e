import { ConfigError, fromZodError, parseJson } from "./config-errors.js";
import { type IpamInput, ipamSchema } from "./config-schema.js";
import type { ConfigFs } from "./types.js";

export { configurationPathFile, DEFAULT_FLAT_FILE_PATHS, FLAT_FILE_NAME, findFlatFile, flatFileCandidates } from "./config-paths.js";

/** A parsed flat file: the raw object (for merging) and which keys it sets. */
export interface FlatFile {
  path: string;
  raw: Record<string, unknown>;
}

/**
 * Reads a flat file. Bad JSON → code 6 naming the file; a JSON document that is not an object → code 7.
 */
export function readFlatFile(fs: ConfigFs, path: string): FlatFile {
  let text: string;
  try {
    text = fs.readText(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(7, path, `flat file ${path} cannot be read: ${reason}`, { cause: error });
  }
  const raw = parseJson(text, path, `flat file ${path}`);
  if (!isPlainObject(raw)) {
    throw new ConfigError(7, path, `flat file ${path} must hold a JSON object of IPAM keys`);
  }
  return { path, raw };
}

/** Checks the flat file on its own, so a bad key is reported with the file it came from. */
export function validateFlatFile(flat: FlatFile): void {
  const parsed = ipamSchema.safeParse(flat.raw);
  if (!parsed.success) throw fromZodError(parsed.error, flat.raw, ["ipam"], flat.path);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, not assignment: a "__proto__" key from JSON must stay a plain own key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Keys never taken from the flat file: Whereabouts restores the NAD's value (or the default) after merging. */
const NEVER_FROM_FLAT = new Set(["enable_overlapping_ranges"]);

export interface MergeResult {
  merged: Record<string, unknown>;
  /** Dotted paths (below `ipam.`) whose value came from the flat file, e.g. `kubernetes.kubeconfig`. */
  fromFlat: Set<string>;
}

/**
 * Deep-merges the flat file into the inline IPAM config. A key the inline config sets (present in
 * the JSON, whatever its value: `false`, `""` and `[]` count as set) always wins; the flat file fills
 * only keys that are absent, recursing into objects (`kubernetes`, `dns`). Arrays are never merged.
 */
export function mergeFlat(inline: Record<string, unknown>, flat: Record<string, unknown>): MergeResult {
  const fromFlat = new Set<string>();
  const merged = mergeLevel(inline, flat, "", fromFlat);
  return { merged, fromFlat };
}

function mergeLevel(inline: Record<string, unknown>, flat: Record<string, unknown>, prefix: string, fromFlat: Set<string>) {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(inline)) define(out, key, value);
  for (const [key, value] of Object.entries(flat)) {
    if (prefix === "" && NEVER_FROM_FLAT.has(key)) continue;
    if (!Object.hasOwn(inline, key)) {
      define(out, key, value);
      fromFlat.add(`${prefix}${key}`);
      continue;
    }
    const own = inline[key];
    if (isPlainObject(own) && isPlainObject(value)) define(out, key, mergeLevel(own, value, `${prefix}${key}.`, fromFlat));
  }
  return out;
}

/** The validated merge result. */
export function parseMerged(merged: Record<string, unknown>): IpamInput {
  const parsed = ipamSchema.safeParse(merged);
  if (!parsed.success) throw fromZodError(parsed.error, merged, ["ipam"]);
  return parsed.data;
}
