import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { isAcknowledged, type Unavailable } from "./generation-commit.js";
import { errno, HEADER_BYTES, type Header, type Listing } from "./generation-format.js";

/**
 * The read side of the protocol in generations.ts: reading one generation file (whole, or only
 * its header prefix) and settling a commit. Failures are reported through `unavailable`.
 */

/** A reader re-reads this many times when the generation it found vanishes (GC) before it opens it. */
export const RETRIES = 64;

/** A generation file's text; undefined when it is gone (collected under us). */
export function readText(path: string, unavailable: Unavailable): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (errno(error) === "ENOENT") return undefined;
    throw unavailable("read", path, error);
  }
}

/** The first {@link HEADER_BYTES} of a generation file as text; undefined when it is gone. */
export function readPrefix(path: string, unavailable: Unavailable): string | undefined {
  try {
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(HEADER_BYTES);
      const bytesRead = readSync(fd, buffer, 0, HEADER_BYTES, 0);
      return buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if (errno(error) === "ENOENT") return undefined;
    throw unavailable("read", path, error);
  }
}

/** What settling needs of an object directory: its listing and a generation's header. */
export interface GenerationView {
  list(dir: string): Promise<Listing | undefined>;
  peek(dir: string, gen: number, object: string): Promise<{ header: Header; deleted: boolean } | undefined>;
}

export type Settled = { kind: "ok"; listing: Listing } | { kind: "stale" } | { kind: "unknown"; reason: string };

/**
 * After linking `target`: is our commit part of the object's history? The highest generation
 * is never removed (only generations two below a newer one are), so if a newer generation had
 * existed when we linked, it (or a successor) is still there and its ancestry, which records
 * the commit id of the first file ever linked at each of the last slots, does not name us.
 * Further back than the ancestry reaches, the ack decides: whoever built on our file found our
 * temp link still there (we remove it only after this check) and created `.ack-<our commit>`
 * before linking; nobody builds on a file that was not the highest, so a stale link gets none.
 */
export async function settle(options: {
  view: GenerationView;
  dir: string;
  target: number;
  commit: string;
  object: string;
  unavailable: Unavailable;
}): Promise<Settled> {
  const { view, dir, target, commit, object } = options;
  for (let i = 0; i < RETRIES; i++) {
    const listing = await view.list(dir);
    if (listing?.max === undefined || listing.max < target) return { kind: "unknown", reason: "the object directory was emptied" };
    if (listing.max === target) return { kind: "ok", listing };
    const peeked = await view.peek(dir, listing.max, object);
    if (peeked === undefined) continue;
    const distance = listing.max - target;
    if (distance <= peeked.header.ancestry.length) {
      return peeked.header.ancestry[distance - 1] === commit ? { kind: "ok", listing } : { kind: "stale" };
    }
    return isAcknowledged(dir, commit, options.unavailable) ? { kind: "ok", listing } : { kind: "stale" };
  }
  return { kind: "unknown", reason: "the object kept changing" };
}
