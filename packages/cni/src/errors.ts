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

/** The error JSON written to stdout: `{cniVersion, code, msg, details?}` (details omitted when empty), newline-terminated. */
export function errorJson(error: CniError, cniVersion: string): string {
  const body: { cniVersion: string; code: number; msg: string; details?: string } = { cniVersion, code: error.code, msg: error.message };
  if (error.details !== undefined && error.details !== "") body.details = error.details;
  return `${JSON.stringify(body)}\n`;
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
