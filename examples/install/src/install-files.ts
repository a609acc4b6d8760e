import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

// Atomic file replacement for the installer (install.ts): every file it puts on the host is written
// to a temporary file in the same directory and renamed over the target. rename(2) replaces the
// directory entry itself, so a symlink planted at the target (Whereabouts' installer leaves
// /opt/cni/bin/whereabouts as one on some hosts) is replaced, never written through, and a runtime
// that executes or reads the file at any moment sees the old content or the new, never a part.

/** Why an install step failed; `code` is stable, the message names the file. */
export class InstallError extends Error {
  override readonly name = "InstallError";
  constructor(
    readonly code: "SOURCE_MISSING" | "TARGET_NOT_WRITABLE" | "SERVICE_ACCOUNT" | "ENVIRONMENT" | "USAGE",
    message: string,
  ) {
    super(message);
  }
}

/** The suffix of the installer's temporary files: `.<name>.ipamkit-tmp-<pid>-<hex>`. */
const TEMP = /^\..+\.ipamkit-tmp-\d+-[0-9a-f]{8}$/;

export type WriteOutcome = "written" | "unchanged";

/** The target's bytes when it is a regular file of this mode (not a link, not a directory), else undefined. */
function currentContent(path: string, mode: number): Buffer | undefined {
  try {
    const stat = lstatSync(path);
    if (!stat.isFile() || (stat.mode & 0o7777) !== mode) return undefined;
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(fd);
  } catch {
    // best effort: some file systems refuse fsync on a directory
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Puts `data` at `path` with `mode`, atomically, unless a regular file with exactly these bytes
 * and this mode is already there ("unchanged": nothing is touched, so a watcher rewrites only on
 * change). The temporary file is created with O_EXCL|O_NOFOLLOW beside the target and renamed over
 * it; on failure it is removed and an {@link InstallError} names the target.
 */
export function writeFileAtomic(path: string, data: Buffer | string, mode: number): WriteOutcome {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  const current = currentContent(path, mode);
  if (current?.equals(bytes)) return "unchanged";
  const temp = join(dirname(path), `.${basename(path)}.ipamkit-tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fchmodSync(fd, mode); // the umask may have narrowed the mode at creation
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    throw new InstallError("TARGET_NOT_WRITABLE", `cannot write ${path}: ${(error as Error).message}`);
  }
  fsyncDir(dirname(path));
  return "written";
}

/** Copies `source` to `target` through {@link writeFileAtomic}; a missing source is SOURCE_MISSING. */
export function copyFileAtomic(source: string, target: string, mode: number): WriteOutcome {
  let bytes: Buffer;
  try {
    bytes = readFileSync(source);
  } catch (error) {
    throw new InstallError("SOURCE_MISSING", `cannot read ${source}: ${(error as Error).message}`);
  }
  return writeFileAtomic(target, bytes, mode);
}

/**
 * Removes temporary files an installer killed mid-write left in `dir` (older than `olderThanMs`,
 * so that a concurrent installer's file in flight is left alone). Returns the names removed.
 */
export function removeStaleTempFiles(dir: string, olderThanMs = 60_000, now = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!TEMP.test(name)) continue;
    const path = join(dir, name);
    try {
      const stat = lstatSync(path);
      if (!stat.isFile() || now - stat.mtimeMs < olderThanMs) continue;
      rmSync(path, { force: true });
      removed.push(name);
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}
