import type * as z from "zod/mini";

/** CNI error codes a config can fail with: 1 version, 2 unsupported value, 6 undecodable, 7 invalid. */
export type ConfigErrorCode = 1 | 2 | 6 | 7;

/**
 * A network configuration the plugin refuses. `key` is the offending key path (`ipam.range_start`,
 * `ipam.ipRanges[1].exclude[0]`, `cniVersion`, …); the message names the key and its value, never a
 * password. `cniCode` is the CNI error code the dispatcher should return.
 */
export class ConfigError extends Error {
  readonly key: string;
  readonly cniCode: ConfigErrorCode;

  constructor(cniCode: ConfigErrorCode, key: string, detail: string, options: { cause?: unknown } = {}) {
    super(`[ipamkit] [cni] ${detail}`, options.cause === undefined ? {} : { cause: options.cause });
    this.name = "ConfigError";
    this.key = key;
    this.cniCode = cniCode;
  }
}

/** Key names whose values are never printed (`etcd_password`, and typos or look-alikes of it). */
const SECRET_KEY = /pas+w|secret|token|credential/i;
const MAX_VALUE_CHARS = 120;

/** `ipam.ipRanges[1].range_start` from `["ipam", "ipRanges", 1, "range_start"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out === "" ? "(config)" : out;
}

/** The value as it appears in messages: JSON, shortened, `(missing)` when absent, redacted for secrets. */
export function formatValue(key: string, value: unknown): string {
  if (value === undefined) return "(missing)";
  const last = key.slice(key.lastIndexOf(".") + 1);
  if (SECRET_KEY.test(last)) return '"<redacted>"';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // too deep to serialise (or a cycle): String() of such an array recurses as deep, so describe it
    text = Array.isArray(value) ? `[an array of ${value.length}, nested too deep to show]` : "{an object nested too deep to show}";
  }
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

/** Builds a ConfigError whose message reads `<key> <value>[ (from flat file <path>)]: <reason>`. */
export function configError(
  cniCode: ConfigErrorCode,
  key: string,
  value: unknown,
  reason: string,
  options: { source?: string | undefined; cause?: unknown } = {},
): ConfigError {
  const from = options.source === undefined ? "" : ` (from flat file ${options.source})`;
  return new ConfigError(cniCode, key, `${key} ${formatValue(key, value)}${from}: ${reason}`, { cause: options.cause });
}

/** The value at `path` inside `root` (undefined when any step is missing). */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    if (!Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/**
 * Turns the first zod issue into a ConfigError (code 7) naming the key path and value.
 * `prefix` is prepended to the issue path (e.g. `["ipam"]` when validating a flat file).
 */
export function fromZodError(error: z.core.$ZodError, root: unknown, prefix: readonly PropertyKey[], source?: string): ConfigError {
  const issue = error.issues[0];
  if (issue === undefined) return configError(7, formatPath(prefix), root, "invalid configuration", { source });
  if (issue.code === "unrecognized_keys") {
    const unknownKey = issue.keys[0] ?? "";
    const path = [...issue.path, unknownKey];
    const key = formatPath([...prefix, ...path]);
    const parent = formatPath([...prefix, ...issue.path]);
    const reason = parent === "ipam" ? "unknown key (not a Whereabouts or ipamkit IPAM key)" : "unknown key";
    return configError(7, key, valueAt(root, path), reason, { source });
  }
  const key = formatPath([...prefix, ...issue.path]);
  const value = valueAt(root, issue.path);
  const reason = value === undefined && issue.code === "invalid_type" ? "required" : `${issue.message}${nearestForm(issue, value)}`;
  return configError(7, key, value, reason, { source });
}

/** The nearest accepted form of a value of the wrong JSON type (`"false"` → false), or "". */
function nearestForm(issue: z.core.$ZodIssue, value: unknown): string {
  if (issue.code !== "invalid_type") return "";
  const expected = issue.expected;
  if (expected === "boolean" && (value === "true" || value === "false")) return `; write ${value} (no quotes)`;
  if ((expected === "number" || expected === "int") && typeof value === "string" && /^-?\d+(\.\d+)?$/.test(value.trim())) {
    return `; write ${value.trim()} (no quotes)`;
  }
  if (expected === "string" && (typeof value === "number" || typeof value === "boolean")) return `; write "${String(value)}"`;
  if (expected === "array" && typeof value === "string") return `; write [${JSON.stringify(value)}]`;
  return "";
}

/** JSON.parse without leaking the parsed text: V8 quotes a snippet of the input in some messages. */
export function parseJson(text: string, key: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const raw = error instanceof Error ? error.message : String(error);
    const reason = raw.replace(/,\s*".*" is not valid JSON$/s, "");
    throw new ConfigError(6, key, `${what} is not valid JSON: ${reason}`);
  }
}

/** `text` with every occurrence of the given secrets (3 characters or more) replaced by `<redacted>`. */
export function scrubText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 3 && out.includes(secret)) out = out.split(secret).join("<redacted>");
  return out;
}

/** Replaces every occurrence of the given secrets in a ConfigError message (a last line of defence). */
export function scrubSecrets(error: ConfigError, secrets: readonly string[]): ConfigError {
  let message = error.message.replace(/^\[ipamkit\] \[cni\] /, "");
  let changed = false;
  for (const secret of secrets) {
    if (secret.length >= 3 && message.includes(secret)) {
      message = message.split(secret).join("<redacted>");
      changed = true;
    }
  }
  return changed ? new ConfigError(error.cniCode, error.key, message, { cause: error.cause }) : error;
}
