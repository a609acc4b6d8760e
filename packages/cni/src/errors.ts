import type { CniCommand } from "./types.js";

/**
 * CNI error codes. 0–99 are reserved by the spec (8 and 999 come from the reference library);
 * 100 and above are plugin-specific:
 * - 100 RANGE_EXHAUSTED: no free address left in a range (ADD). On STATUS the same condition is 50.
 * - 101 ADDRESS_UNAVAILABLE: a requested address is held by another attachment, excluded or unusable.
 * - 102 POOL_CORRUPT: stored pool state is undecodable or violates an invariant; never reset silently.
 * - 103 ACCESS_DENIED: the store refused our credentials or permissions (fix the configuration; not retryable).
 * - 104 CHECK_FAILED: CHECK found a reservation missing, or different from `prevResult`.
 * - 105 STORE_REJECTED: the store refused the write for good (object too large for the store, or an
 *   offset older Whereabouts readers could not parse); nothing was written. Not retryable.
 */
export const CNI_CODES = {
  INCOMPATIBLE_VERSION: 1,
  UNSUPPORTED_FIELD: 2,
  INVALID_ENV: 4,
  IO_FAILURE: 5,
  DECODE_FAILURE: 6,
  INVALID_CONFIG: 7,
  TRY_AGAIN_LATER: 11,
  NOT_AVAILABLE: 50,
  RANGE_EXHAUSTED: 100,
  ADDRESS_UNAVAILABLE: 101,
  POOL_CORRUPT: 102,
  ACCESS_DENIED: 103,
  CHECK_FAILED: 104,
  STORE_REJECTED: 105,
  INTERNAL: 999,
} as const;

export type CniCode = (typeof CNI_CODES)[keyof typeof CNI_CODES];

/** An error already in CNI terms: `{code, msg, details?}` on the wire. */
export class CniError extends Error {
  constructor(
    readonly code: number,
    msg: string,
    readonly details?: string,
  ) {
    super(msg);
    this.name = "CniError";
  }
}

/** ipamkit error codes (`IpamError.code`) → CNI code. Duck-typed so a second copy of core still maps. */
const IPAM_CODES: Readonly<Record<string, number>> = {
  STORE_CONFLICT: CNI_CODES.TRY_AGAIN_LATER,
  STORE_UNAVAILABLE: CNI_CODES.TRY_AGAIN_LATER,
  INVALID_RANGE: CNI_CODES.INVALID_CONFIG,
  INVALID_ADDRESS: CNI_CODES.INVALID_CONFIG,
  INVALID_KEY: CNI_CODES.INVALID_CONFIG,
  INVALID_REQUEST: CNI_CODES.INVALID_CONFIG,
  RANGE_EXHAUSTED: CNI_CODES.RANGE_EXHAUSTED,
  ADDRESS_UNAVAILABLE: CNI_CODES.ADDRESS_UNAVAILABLE,
  POOL_CORRUPT: CNI_CODES.POOL_CORRUPT,
  STORE_CORRUPT: CNI_CODES.POOL_CORRUPT,
  STORE_ACCESS_DENIED: CNI_CODES.ACCESS_DENIED,
  STORE_REJECTED: CNI_CODES.STORE_REJECTED,
};

/**
 * On STATUS the spec allows only 50/51 for "cannot service ADD": an exhausted range or an
 * unreachable store (cni-contract §9) is 50 there.
 */
const STATUS_CODES: Readonly<Record<string, number>> = {
  RANGE_EXHAUSTED: CNI_CODES.NOT_AVAILABLE,
  STORE_UNAVAILABLE: CNI_CODES.NOT_AVAILABLE,
};

/**
 * The one place any thrown value becomes a CNI error:
 * - a {@link CniError} passes through unchanged (as skel's `checkVersionAndCall`);
 * - an object with a numeric `cniCode` (the config loader's `ConfigError`) keeps that code and its message;
 * - an ipamkit error is mapped by its `code` (conflict/unavailable → 11, validation → 7, exhausted → 100
 *   or 50 on STATUS, address unavailable → 101, corrupt → 102, access denied → 103; the `cause`'s
 *   message, if any, goes to `details`);
 * - anything else → 999 `internal error: <message>`.
 * Messages and details never carry a stack trace.
 */
export function toCniError(error: unknown, options: { command?: CniCommand } = {}): CniError {
  if (error instanceof CniError) return error;
  if (isObject(error)) {
    const cniCode = error.cniCode;
    if (typeof cniCode === "number" && Number.isInteger(cniCode)) {
      return new CniError(cniCode, clean(messageOf(error)));
    }
    const code = error.code;
    if (typeof code === "string" && Object.hasOwn(IPAM_CODES, code)) {
      const mapped = (options.command === "STATUS" ? STATUS_CODES[code] : undefined) ?? (IPAM_CODES[code] as number);
      const cause = error.cause === undefined ? "" : clean(messageOf(error.cause));
      return new CniError(mapped, clean(messageOf(error)), cause === "" ? undefined : cause);
    }
  }
  return new CniError(CNI_CODES.INTERNAL, `internal error: ${clean(messageOf(error))}`);
}

/** An error answer is at most this many bytes (RELIABILITY.md): kubelet logs it, and it may quote input. */
export const MAX_ERROR_ANSWER_BYTES = 4096;
/** A quoted value (`"…"`) in a message is cut to this many characters. */
const MAX_QUOTED_CHARS = 120;
/**
 * Bytes of the answer given to `msg`; `details` gets what is left (each as JSON-escaped UTF-8). The
 * native forwarder's own errors are bounded by the same number (generated into forwarder-codes.h).
 */
export const ERROR_MSG_BYTES = 2560;

/**
 * The error JSON written to stdout: `{cniVersion, code, msg, details?}` (details omitted when empty),
 * newline-terminated. The one place every error answer is built, so the one place it is bounded: each
 * quoted value in `msg` and `details` is cut to 120 characters, and what is still too long is cut
 * (`…`) so the answer stays within {@link MAX_ERROR_ANSWER_BYTES}.
 */
export function errorJson(error: CniError, cniVersion: string): string {
  const version = fit(cniVersion, 64);
  const msg = fit(cutQuoted(error.message), ERROR_MSG_BYTES);
  const body: { cniVersion: string; code: number; msg: string; details?: string } = { cniVersion: version, code: error.code, msg };
  if (error.details !== undefined && error.details !== "") {
    const room =
      MAX_ERROR_ANSWER_BYTES - Buffer.byteLength(JSON.stringify({ cniVersion: version, code: error.code, msg, details: "" })) - 1;
    body.details = fit(cutQuoted(error.details), room);
  }
  return `${JSON.stringify(body)}\n`;
}

/**
 * errorJson for an answer given before (or without) the plugin's own parse of stdin: in the
 * config's `cniVersion` when stdin is JSON that names one, else the newest supported version.
 */
export function errorAnswer(error: CniError, stdin: string): string {
  let cniVersion = DEFAULT_ERROR_VERSION;
  try {
    const v = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    if (typeof v === "string" && v !== "") cniVersion = v;
  } catch {
    // not JSON: the default
  }
  return errorJson(error, cniVersion);
}

/** The version of an error answer when the config names none (the native forwarder's too, generated). */
export const DEFAULT_ERROR_VERSION = "1.1.0";

/** Each `"…"` quoted value in `text` longer than {@link MAX_QUOTED_CHARS} cut to that length, marked `…`. Linear. */
function cutQuoted(text: string): string {
  let out = "";
  let from = 0;
  for (let open = text.indexOf('"'); open !== -1; ) {
    let close = open + 1;
    let cut = -1; // where the value reaches MAX_QUOTED_CHARS, at an escape boundary
    while (close < text.length && text[close] !== '"') {
      if (cut === -1 && close - open - 1 >= MAX_QUOTED_CHARS) cut = close;
      close += text[close] !== "\\" ? 1 : text[close + 1] === "u" ? 6 : 2;
    }
    if (close >= text.length) break; // unterminated: left to fit()
    if (cut !== -1) {
      out += `${text.slice(from, open)}"${text.slice(open + 1, cut)}…"`;
      from = close + 1;
    }
    open = text.indexOf('"', close + 1);
  }
  return from === 0 ? text : out + text.slice(from);
}

/** Bytes `text` takes inside a JSON string (escaped, UTF-8). */
function jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), "utf8") - 2;
}

/** `text` cut (marked `…`) so that it takes at most `max` bytes in the JSON answer. */
function fit(text: string, max: number): string {
  if (text.length <= max / 6 || jsonBytes(text) <= max) return text;
  let low = 0;
  let high = Math.min(text.length, max);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(`${text.slice(0, mid)}…`) <= max) low = mid;
    else high = mid - 1;
  }
  return `${text.slice(0, low)}…`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function messageOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (isObject(value) && typeof value.message === "string") return value.message;
  if (value === undefined || value === null || typeof value !== "object") return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** Drops stack-frame lines (`    at fn (file:1:2)`) and surrounding blank space; never returns a stack. */
function clean(text: string): string {
  const kept = text.split(/\r?\n/).filter((line) => !/^\s*at\s/.test(line));
  const joined = kept
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ");
  return joined === "" ? "unknown error" : joined;
}
