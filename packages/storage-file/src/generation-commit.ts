import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, readlinkSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import type { StoreUnavailableError } from "@ipamkit/core";
import { ackFileName, errno, fsyncAsync, genFileName, KEEP, type Listing, quietly, tempFileName } from "./generation-format.js";

/**
 * The write side of the protocol in generations.ts: temp files, ack files, garbage collection
 * and durable directories. Failures are reported through `unavailable`.
 */

/** Temp and ack files older than this are leftovers of a crashed writer and are removed by GC. */
const STALE_TEMP_MS = 60 * 60 * 1000;

/** Builds the error for a failed file-system call (`what` failed on `path`). */
export type Unavailable = (what: string, path: string, error: unknown) => StoreUnavailableError;

/** Writes `text` to a new, fsynced temp file (mode 0600) in `dir`; returns its path. */
export async function writeTemp(dir: string, text: string, unavailable: Unavailable): Promise<string> {
  const path = join(dir, tempFileName());
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    throw unavailable("create", path, error);
  }
  try {
    fchmodSync(fd, 0o600); // exact mode whatever the umask
    writeFileSync(fd, text, "utf8");
    await fsyncAsync(fd);
  } catch (error) {
    quietly(() => closeSync(fd));
    quietly(() => unlinkSync(path));
    throw unavailable("write", path, error);
  }
  try {
    closeSync(fd);
  } catch (error) {
    quietly(() => unlinkSync(path));
    throw unavailable("write", path, error);
  }
  return path;
}

/** Creates `.ack-<commit>` (see settle in generation-read.ts); it may exist already. */
export function acknowledge(dir: string, commit: string, unavailable: Unavailable): void {
  const path = join(dir, ackFileName(commit));
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (error) {
    if (errno(error) !== "EEXIST") throw unavailable("create", path, error);
  }
}

/** Whether someone built on `commit` while its writer had not settled (its `.ack-<commit>` exists). */
export function isAcknowledged(dir: string, commit: string, unavailable: Unavailable): boolean {
  const path = join(dir, ackFileName(commit));
  try {
    statSync(path);
    return true;
  } catch (error) {
    if (errno(error) === "ENOENT") return false;
    throw unavailable("stat", path, error);
  }
}

/** Best effort: removes generations older than the previous one, and stale temp files. */
export function collectGarbage(dir: string, target: number, listing: Listing): void {
  const floor = target - (KEEP - 1);
  for (const g of listing.gens) if (g < floor) quietly(() => unlinkSync(join(dir, genFileName(g))));
  const now = Date.now();
  for (const name of listing.temps) {
    const path = join(dir, name);
    // A fresh temp or ack file may belong to a live writer; one an hour old is a crashed writer's.
    quietly(() => {
      if (now - statSync(path).mtimeMs > STALE_TEMP_MS) unlinkSync(path);
    });
  }
}

export async function fsyncDirectory(dir: string, unavailable: Unavailable): Promise<void> {
  try {
    const fd = openSync(dir, "r");
    try {
      await fsyncAsync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw unavailable("sync", dir, error);
  }
}

/**
 * mkdir -p: mode 0700 for `root` and below, exactly (whatever the umask); an fsync of each new directory's parent.
 * Bounded: an existing path that is not a directory (a dangling symlink — a volume not mounted yet —
 * or a file) and a directory that refuses new entries (`/proc/self`) fail at once, never retried.
 */
export async function ensureDirectory(dir: string, root: string, unavailable: Unavailable, parentMade = false): Promise<void> {
  const ours = dir === root || dir.startsWith(`${root}${sep}`);
  try {
    mkdirSync(dir, { mode: ours ? 0o700 : 0o755 });
  } catch (error) {
    const code = errno(error);
    if (code === "EEXIST") return existingDirectory(dir, unavailable);
    if (code === "ENOENT" && dirname(dir) !== dir && !parentMade) {
      await ensureDirectory(dirname(dir), root, unavailable);
      return ensureDirectory(dir, root, unavailable, true);
    }
    throw unavailable("create directory", dir, error);
  }
  try {
    if (ours) chmodSync(dir, 0o700);
  } catch (error) {
    throw unavailable("chmod", dir, error);
  }
  await fsyncDirectory(dirname(dir), unavailable);
}

/** `dir` exists: it must be a directory, or a symlink to one. */
function existingDirectory(dir: string, unavailable: Unavailable): void {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (error) {
    if (errno(error) !== "ENOENT") throw unavailable("stat", dir, error);
    let target = "";
    quietly(() => {
      target = readlinkSync(dir);
    });
    const reason = `it is a symbolic link to ${target === "" ? "a path" : target}, which does not exist (a volume not mounted yet?)`;
    throw unavailable("create directory", dir, new Error(reason));
  }
  if (!isDirectory) throw unavailable("create directory", dir, new Error("it exists and is not a directory"));
}
