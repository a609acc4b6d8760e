import { randomBytes } from "node:crypto";
import { type BigIntStats, fsync } from "node:fs";
import { DecodeError, type Json } from "./codec.js";

/**
 * The on-disk format of one object directory (see DESIGN.md): file names, the header every
 * generation file starts with, and the small file-system helpers the protocol shares.
 */

/** How many predecessor commit ids each generation records. */
export const ANCESTRY = 16;
/** Generations kept after a commit: the new one and the previous one. */
export const KEEP = 2;
const GEN_FILE = /^([0-9]{12,15})\.json$/;
const TEMP_PREFIX = ".tmp-";
/** `.ack-<commit id>`: left by a writer that built on that commit before its writer had settled. */
const ACK_PREFIX = ".ack-";
const COMMIT_ID = /^[0-9a-f]{16}$/;
const HEADER = /^\{"commit":"([0-9a-f]{16})","ancestry":\[((?:"[0-9a-f]{16}"(?:,"[0-9a-f]{16}")*)?)\],/;
/** Enough bytes of a generation file to hold the header and the tombstone marker. */
export const HEADER_BYTES = 64 + ANCESTRY * 19 + 32;
const DELETED_FIELDS = '"deleted":true';

export const DELETED: unique symbol = Symbol("deleted");
export type Deleted = typeof DELETED;

export interface Header {
  /** Random id of this generation's commit ("" for a file written by hand without one). */
  readonly commit: string;
  /** Commit ids of the previous generations, newest first. */
  readonly ancestry: readonly string[];
}

export interface Snapshot<T> {
  readonly gen: number;
  readonly path: string;
  readonly header: Header;
  readonly value: T | Deleted;
}

export interface Listing {
  /** Generation numbers, unsorted. */
  readonly gens: number[];
  readonly max: number | undefined;
  /** Temp and ack file names. */
  readonly temps: string[];
}

/**
 * Decodes the body fields of a parsed generation file; `text` is the file's text (a decoder may
 * reuse parts of it). Throws DecodeError (or an IpamError) on bad content.
 */
export type Decode<T> = (json: Json, path: string, text: string) => T;

export function genFileName(gen: number): string {
  return `${String(gen).padStart(12, "0")}.json`;
}

/** The version for a generation number: its decimal text. */
export function versionOf(gen: number): string {
  return String(gen);
}

export function parseVersion(version: string): number | undefined {
  return /^[1-9][0-9]{0,14}$/.test(version) ? Number(version) : undefined;
}

/** A fresh, unique temp file name for this process. */
export function tempFileName(): string {
  return `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString("hex")}`;
}

/** The ack file that tells the writer of `commit` that someone built on it. */
export function ackFileName(commit: string): string {
  return `${ACK_PREFIX}${commit}`;
}

/** A fresh random commit id (16 lower-case hex digits). */
export function newCommitId(): string {
  return randomBytes(8).toString("hex");
}

/** Sorts a directory's entry names into generations and temp/ack files; anything else is ignored. */
export function listingOf(names: readonly string[]): Listing {
  const gens: number[] = [];
  const temps: string[] = [];
  let max: number | undefined;
  for (const name of names) {
    const m = GEN_FILE.exec(name);
    if (m !== null) {
      const gen = Number(m[1]);
      gens.push(gen);
      if (max === undefined || gen > max) max = gen;
    } else if (name.startsWith(TEMP_PREFIX) || name.startsWith(ACK_PREFIX)) {
      temps.push(name);
    }
  }
  return { gens, max, temps };
}

/** The ancestry a generation built on `parent` records: the parent's commit, then its ancestry, up to {@link ANCESTRY}. */
export function ancestryAfter(parent: Header | undefined): string[] {
  return parent === undefined ? [] : [parent.commit, ...parent.ancestry].slice(0, ANCESTRY);
}

/** The full text of a generation file: the header, then `fields` (or the tombstone marker). */
export function generationText(commit: string, ancestry: readonly string[], fields: string | Deleted): string {
  const header = `{"commit":"${commit}","ancestry":[${ancestry.map((a) => `"${a}"`).join(",")}],`;
  return `${header}${fields === DELETED ? DELETED_FIELDS : fields}}\n`;
}

/** Builds the error for malformed content in a generation file (`cause`: the underlying error, if any). */
export type Corrupt = (reason: string, cause?: unknown) => Error;

/**
 * Parses the text of generation `gen` (at `path`): its header, then a tombstone or the body, which
 * `decode` decodes. Malformed content, a DecodeError from `decode` included, throws what `corrupt` returns.
 */
export function parseGeneration<T>(text: string, gen: number, path: string, decode: Decode<T>, corrupt: Corrupt): Snapshot<T> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw corrupt(`invalid JSON (${error instanceof Error ? error.message : String(error)})`, error);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw corrupt("expected a JSON object");
  const obj = json as Json;
  const header = headerOf(obj, corrupt);
  if (obj.deleted !== undefined) {
    if (obj.deleted !== true) throw corrupt('"deleted" must be true when present');
    return { gen, path, header, value: DELETED };
  }
  try {
    return { gen, path, header, value: decode(obj, path, text) };
  } catch (error) {
    if (error instanceof DecodeError) throw corrupt(error.message, error);
    throw error;
  }
}

/** The header fields of a parsed generation file; throws what `invalid` returns when they are malformed. */
function headerOf(obj: Json, invalid: Corrupt): Header {
  const commit = obj.commit ?? "";
  const ancestry = obj.ancestry ?? [];
  if (commit !== "" && (typeof commit !== "string" || !COMMIT_ID.test(commit))) {
    throw invalid('"commit" must be 16 lower-case hex digits');
  }
  if (!Array.isArray(ancestry) || ancestry.some((a) => typeof a !== "string" || (a !== "" && !COMMIT_ID.test(a)))) {
    throw invalid('"ancestry" must be an array of commit ids');
  }
  return { commit: commit as string, ancestry: ancestry as string[] };
}

/**
 * The header and tombstone flag from the first bytes of a generation file, when they have the
 * exact layout this package writes; undefined otherwise (the whole file must be parsed).
 */
export function headerFromPrefix(prefix: string): { header: Header; deleted: boolean } | undefined {
  const m = HEADER.exec(prefix);
  if (m === null) return undefined;
  const ancestry = m[2] === "" ? [] : (m[2] as string).split(",").map((q) => q.slice(1, -1));
  const rest = prefix.slice(m[0].length);
  return { header: { commit: m[1] as string, ancestry }, deleted: rest.startsWith(`${DELETED_FIELDS}}`) };
}

/**
 * I/O: metadata calls and reads/writes of these small files are synchronous (each is a few
 * microseconds; a hop through libuv's thread pool costs more than the call). fsync, the one call
 * that waits for the device, runs on the thread pool so it does not block the event loop.
 */
export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

export function quietly(action: () => void): void {
  try {
    action();
  } catch {
    // best effort
  }
}

/** A file's identity for the cache: any rewrite changes size, mtime or ctime (ctime cannot be set back). */
export function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

export function errno(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined;
}

export function describe(error: unknown): string {
  return errno(error) ?? (error instanceof Error ? error.message : String(error));
}
