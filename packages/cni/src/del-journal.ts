// The DEL journal's shape: what the binary (examples/cni-plugin/src/forwarder-journal.h, its
// constants generated from this file by build.mjs) writes when no agent answers a DEL, and what the
// agent (packages/agent/src/journal.ts) replays. One record per attachment, named by the
// attachment's exact identity, so a retried DEL replaces its own record and the bound counts
// attachments, never retries.

/** Where the chart and the installer put the journal (`agent.journalDir`); the binary journals only where `agent_journal_dir` says. */
export const CHART_JOURNAL_DIR = "/var/lib/ipamkit/journal";
/** At most this many entries in the directory: a DEL that would add one more answers code 11. */
export const JOURNAL_MAX_RECORDS = 1024;
/** A record larger than this (its config is) is not written: that DEL answers code 11. */
export const JOURNAL_RECORD_MAX_BYTES = 128 * 1024;
/** The longest `agent_journal_dir`, in UTF-8 bytes (a record's path must fit PATH_MAX). */
export const JOURNAL_DIR_MAX_BYTES = 2048;
/** Every record's file name starts with this; temporary files (written, then renamed) with JOURNAL_TEMP_PREFIX. */
export const JOURNAL_RECORD_PREFIX = "del:";
export const JOURNAL_TEMP_PREFIX = ".tmp-";
/** A file name's longest length (Linux NAME_MAX): a longer record name cannot be journaled. */
export const JOURNAL_NAME_MAX_BYTES = 255;
export const JOURNAL_VERSION = 1;

/** The attachment a DEL releases, as the runtime names it: the config's `name`, CNI_CONTAINERID, CNI_IFNAME. */
export interface JournalKey {
  network: string;
  containerId: string;
  ifName: string;
}

/** One journaled DEL: the call as the binary would have sent it, and when it was written (epoch ms). */
export interface JournalRecord {
  v: typeof JOURNAL_VERSION;
  journaled: number;
  /** The CNI_* variables of the call (CNI_COMMAND is DEL). */
  env: Record<string, string>;
  stdin: string;
}

/** Bytes outside [A-Za-z0-9_.-] become %XX (upper-case hex): names stay one path component, ':' separates the parts. */
function encodePart(part: string): string {
  let out = "";
  for (const byte of Buffer.from(part, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Printable ASCII (no space): what CNI_CONTAINERID and CNI_IFNAME must be to be journaled (the binary reads raw bytes). */
const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * The record's file name: `del:<network>:<container id>:<ifname>`, each part encoded; undefined
 * when a part is empty, the network name holds U+0000, a variable is not printable ASCII, or the
 * name is longer than a file name may be (such a DEL is not journaled: it answers code 11).
 */
export function journalRecordName(key: JournalKey): string | undefined {
  const parts = [key.network, key.containerId, key.ifName];
  if (key.network === "" || key.network.includes("\0")) return undefined;
  if (!PRINTABLE.test(key.containerId) || !PRINTABLE.test(key.ifName)) return undefined;
  const name = `${JOURNAL_RECORD_PREFIX}${parts.map(encodePart).join(":")}`;
  return name.length <= JOURNAL_NAME_MAX_BYTES ? name : undefined;
}

/** The attachment of a call (its env and stdin), when it names one: the config's `name` (a string) and both variables. */
export function journalKeyOf(env: Readonly<Record<string, string | undefined>>, stdin: string): JournalKey | undefined {
  const containerId = env.CNI_CONTAINERID;
  const ifName = env.CNI_IFNAME;
  if (containerId === undefined || ifName === undefined) return undefined;
  let network: unknown;
  try {
    network = (JSON.parse(stdin) as { name?: unknown } | null)?.name;
  } catch {
    return undefined;
  }
  return typeof network === "string" ? { network, containerId, ifName } : undefined;
}

/** The record name of a call, or undefined (see journalRecordName). */
export function journalRecordNameOf(env: Readonly<Record<string, string | undefined>>, stdin: string): string | undefined {
  const key = journalKeyOf(env, stdin);
  return key === undefined ? undefined : journalRecordName(key);
}

/**
 * `agent_journal_dir` of the node's flat file: undefined when absent (no journal: a DEL nobody
 * answers is code 11, as any other call); false when set but not an absolute path of at most
 * JOURNAL_DIR_MAX_BYTES bytes without U+0000 (no journal either, and the DEL's answer says so).
 */
export function journalDirOf(flat: Readonly<Record<string, unknown>>): string | false | undefined {
  const dir = flat.agent_journal_dir;
  if (dir === undefined) return undefined;
  if (typeof dir !== "string" || !dir.startsWith("/") || dir.includes("\0")) return false;
  return Buffer.byteLength(dir, "utf8") <= JOURNAL_DIR_MAX_BYTES ? dir : false;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A record file's text, checked; a string is why it is not a record this agent can replay. */
export function parseJournalRecord(text: string): JournalRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "not JSON";
  }
  if (!isObject(value)) return "not a JSON object";
  if (value.v !== JOURNAL_VERSION) return `unknown version ${JSON.stringify(value.v)}`;
  if (typeof value.journaled !== "number" || !Number.isFinite(value.journaled)) return "journaled must be a number (epoch ms)";
  if (typeof value.stdin !== "string") return "stdin must be a string";
  if (!isObject(value.env)) return "env must be an object";
  const env: Record<string, string> = {};
  for (const [name, v] of Object.entries(value.env)) {
    if (!name.startsWith("CNI_") || typeof v !== "string") return `env.${name} is not a CNI_* string`;
    env[name] = v;
  }
  if (env.CNI_COMMAND !== "DEL") return `not a DEL (CNI_COMMAND ${JSON.stringify(env.CNI_COMMAND)})`;
  return { v: JOURNAL_VERSION, journaled: value.journaled, env, stdin: value.stdin };
}
