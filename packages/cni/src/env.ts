import { formatIp, parseIp } from "@ipamkit/core";
import { CNI_CODES, CniError } from "./errors.js";
import type { CniArgs, CniCommand } from "./types.js";

/** Every CNI command, in the order the spec lists them. */
export const CNI_COMMANDS: readonly CniCommand[] = ["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"];

export function isCniCommand(value: string): value is CniCommand {
  return (CNI_COMMANDS as readonly string[]).includes(value);
}

/** One row of the env table: the variable, the commands that require it, and an optional validator (returns the reason it is invalid). */
export interface EnvSpec {
  name: string;
  requiredFor: readonly CniCommand[];
  validate?: (value: string) => string | undefined;
}

const CONTAINER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** How much of a value a message quotes: the runtime logs the answer, so a huge value is never echoed whole. */
const MAX_QUOTED = 120;
/** Unknown CNI_ARGS keys named in a message; the rest are counted. */
const MAX_NAMED_KEYS = 5;

/** The text shortened to {@link MAX_QUOTED} characters (an ellipsis marks the cut). */
function shorten(text: string): string {
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
}

/** A value as messages quote it: JSON, shortened. */
function quote(text: string): string {
  return JSON.stringify(shorten(text));
}
/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME_BYTES = 15;

/** Reason `CNI_CONTAINERID` is invalid, or undefined (skel's `ValidateContainerID`). */
export function validateContainerId(value: string): string | undefined {
  if (value === "") return "must not be empty";
  if (!CONTAINER_ID.test(value)) return "must start with a letter or digit, then only letters, digits, '_', '.' or '-'";
  return undefined;
}

/** Reason `CNI_IFNAME` is invalid, or undefined (skel's `ValidateInterfaceName`). */
export function validateIfName(value: string): string | undefined {
  if (value === "") return "must not be empty";
  if (Buffer.byteLength(value, "utf8") > MAX_IFNAME_BYTES) return `must be at most ${MAX_IFNAME_BYTES} bytes`;
  if (value === "." || value === "..") return `must not be "${value}"`;
  if (/[/:\s]/u.test(value)) return "must not contain '/', ':' or whitespace";
  return undefined;
}

/**
 * The declarative env table (cni-contract §2). `CNI_PATH` is required by skel for every command but
 * VERSION; an IPAM plugin never executes other plugins, so it is accepted missing (spec-conformant).
 * `CNI_NETNS` is optional on DEL: the netns may already be gone.
 */
export const ENV_TABLE: readonly EnvSpec[] = [
  { name: "CNI_COMMAND", requiredFor: CNI_COMMANDS },
  { name: "CNI_CONTAINERID", requiredFor: ["ADD", "DEL", "CHECK"], validate: validateContainerId },
  { name: "CNI_NETNS", requiredFor: ["ADD", "CHECK"] },
  { name: "CNI_IFNAME", requiredFor: ["ADD", "DEL", "CHECK"], validate: validateIfName },
  { name: "CNI_ARGS", requiredFor: [] },
  { name: "CNI_PATH", requiredFor: [] },
];

type Env = Readonly<Record<string, string | undefined>>;

/** What the dispatcher reads from the environment. Empty variables count as unset. */
export interface CniEnv {
  /** Undefined when `CNI_COMMAND` is unset (skel then prints the "about" line). */
  command: CniCommand | undefined;
  containerId?: string;
  netns?: string;
  ifName?: string;
  /** Raw `CNI_ARGS`; see {@link parseCniArgs}. */
  args: string | undefined;
}

/** Reads the CNI variables. An unknown `CNI_COMMAND` is code 4 naming it. Does not check presence; see {@link checkEnv}. */
export function readEnv(env: Env): CniEnv {
  const command = value(env, "CNI_COMMAND");
  if (command !== undefined && !isCniCommand(command)) {
    throw new CniError(CNI_CODES.INVALID_ENV, `unknown CNI_COMMAND ${quote(command)}: expected one of ${CNI_COMMANDS.join(", ")}`);
  }
  const out: CniEnv = { command, args: value(env, "CNI_ARGS") };
  const containerId = value(env, "CNI_CONTAINERID");
  const netns = value(env, "CNI_NETNS");
  const ifName = value(env, "CNI_IFNAME");
  if (containerId !== undefined) out.containerId = containerId;
  if (netns !== undefined) out.netns = netns;
  if (ifName !== undefined) out.ifName = ifName;
  return out;
}

/**
 * Checks the variables `command` requires against {@link ENV_TABLE}: one CniError code 4 naming every
 * missing variable and every invalid one at once. Variables a command does not require are not validated.
 */
export function checkEnv(env: Env, command: CniCommand): void {
  const missing: string[] = [];
  const invalid: string[] = [];
  for (const spec of ENV_TABLE) {
    if (!spec.requiredFor.includes(command)) continue;
    const v = value(env, spec.name);
    if (v === undefined) {
      missing.push(spec.name);
      continue;
    }
    const reason = spec.validate?.(v);
    if (reason !== undefined) invalid.push(`${spec.name} ${quote(v)} is invalid: ${reason}`);
  }
  if (missing.length === 0 && invalid.length === 0) return;
  const parts = [
    ...(missing.length > 0 ? [`required environment variables missing for ${command}: ${missing.join(", ")}`] : []),
    ...invalid,
  ];
  throw new CniError(CNI_CODES.INVALID_ENV, parts.join("; "));
}

const ARG_KEYS = {
  K8S_POD_NAMESPACE: "podNamespace",
  K8S_POD_NAME: "podName",
  K8S_POD_UID: "podUid",
  K8S_POD_INFRA_CONTAINER_ID: "infraContainerId",
} as const;

/**
 * Parses `CNI_ARGS` (`K=V;K=V`, cni-contract §4). Lenient: empty segments and surrounding blanks are
 * ignored, values may contain '=', empty values leave the field unset, and a repeated key keeps the last
 * value. `IP=` is a comma list; a `/prefix` is stripped and each address must parse (code 7 naming it),
 * returned canonical. As skel, unknown keys are an error (code 2 naming them) unless `IgnoreUnknown` is
 * 1/true; a segment without '=' or with an empty key is code 2 naming it.
 */
export function parseCniArgs(text: string | undefined): CniArgs {
  const out: CniArgs = { ips: [], ignoreUnknown: false, unknown: [] };
  if (text === undefined) return out;
  for (const raw of text.split(";")) {
    const segment = raw.trim();
    if (segment === "") continue;
    const eq = segment.indexOf("=");
    const key = eq < 0 ? "" : segment.slice(0, eq).trim();
    if (key === "") throw new CniError(CNI_CODES.UNSUPPORTED_FIELD, `CNI_ARGS: invalid pair ${quote(segment)}: expected KEY=VALUE`);
    const val = segment.slice(eq + 1).trim();
    if (key === "IgnoreUnknown") {
      out.ignoreUnknown = parseBool(val);
    } else if (key === "IP") {
      out.ips = parseIps(val);
    } else if (Object.hasOwn(ARG_KEYS, key)) {
      const field = ARG_KEYS[key as keyof typeof ARG_KEYS];
      if (val === "") delete out[field];
      else out[field] = val;
    } else if (!out.unknown.includes(key)) {
      out.unknown.push(key);
    }
  }
  if (out.unknown.length > 0 && !out.ignoreUnknown) {
    const named = out.unknown.slice(0, MAX_NAMED_KEYS).map(shorten).join(", ");
    const more = out.unknown.length > MAX_NAMED_KEYS ? ` and ${out.unknown.length - MAX_NAMED_KEYS} more` : "";
    throw new CniError(CNI_CODES.UNSUPPORTED_FIELD, `CNI_ARGS: unknown keys ${named}${more} (set IgnoreUnknown=1 to accept them)`);
  }
  return out;
}

function parseBool(text: string): boolean {
  const lower = text.toLowerCase();
  if (lower === "1" || lower === "true") return true;
  if (lower === "0" || lower === "false" || lower === "") return false;
  throw new CniError(CNI_CODES.UNSUPPORTED_FIELD, `CNI_ARGS: IgnoreUnknown=${quote(text)} is not a boolean (1, true, 0 or false)`);
}

function parseIps(text: string): string[] {
  const ips: string[] = [];
  for (const item of text.split(",")) {
    const trimmed = item.trim();
    if (trimmed === "") continue;
    const slash = trimmed.indexOf("/");
    const address = slash < 0 ? trimmed : trimmed.slice(0, slash);
    try {
      ips.push(formatIp(parseIp(address)));
    } catch {
      throw new CniError(CNI_CODES.INVALID_CONFIG, `CNI_ARGS: IP ${quote(trimmed)} is not a valid IP address`);
    }
  }
  return ips;
}

function value(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}
