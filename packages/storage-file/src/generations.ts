import { randomBytes } from "node:crypto";
import {
  type BigIntStats,
  chmodSync,
  closeSync,
  fchmodSync,
  fsync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, sep } from "node:path";
import { StoreConflictError, StoreCorruptError, StoreUnavailableError } from "@ipamkit/core";
import { DecodeError, type Json } from "./codec.js";

/**
 * Lock-free compare-and-swap over one object directory of immutable generation files.
 * See DESIGN.md for the protocol and the argument for why no conflict is ever missed.
 *
 * - `<gen>.json` (12+ digit zero-padded decimal) is a committed generation; the highest one is the
 *   object's current state and its number is the version.
 * - A writer writes a complete, fsynced temp file, then `link()`s it to `<current+1>.json`: the
 *   link fails with EEXIST when another writer got there first (a conflict; nothing changed).
 * - Garbage collection removes generations older than the previous one, so a very slow writer
 *   could link a *re-used* slot number. To catch that, every file records a random `commit` id and
 *   the commit ids of its last {@link ANCESTRY} predecessors (`ancestry`); after linking, a writer
 *   checks that it is an ancestor of the current highest generation ("settling"). Beyond that
 *   reach, an `.ack-<commit>` left by whoever built on the writer's not-yet-settled file decides.
 */

/** How many predecessor commit ids each generation records. */
export const ANCESTRY = 16;
/** Generations kept after a commit: the new one and the previous one. */
const KEEP = 2;
const GEN_FILE = /^([0-9]{12,15})\.json$/;
const TEMP_PREFIX = ".tmp-";
/** `.ack-<commit id>`: left by a writer that built on that commit before its writer had settled. */
const ACK_PREFIX = ".ack-";
/** Temp and ack files older than this are leftovers of a crashed writer and are removed by GC. */
const STALE_TEMP_MS = 60 * 60 * 1000;
/** A reader re-reads this many times when the generation it found vanishes (GC) before it opens it. */
const RETRIES = 64;
const COMMIT_ID = /^[0-9a-f]{16}$/;
const HEADER = /^\{"commit":"([0-9a-f]{16})","ancestry":\[((?:"[0-9a-f]{16}"(?:,"[0-9a-f]{16}")*)?)\],/;
const HEADER_BYTES = 64 + ANCESTRY * 19 + 32;
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

/** Decodes the body fields of a parsed generation file. Throws DecodeError (or an IpamError) on bad content. */
/** Decodes a generation's JSON; `text` is the file's text (a decoder may reuse parts of it). */
export type Decode<T> = (json: Json, path: string, text: string) => T;

interface Cached<T> {
  readonly identity: string;
  readonly snapshot: Snapshot<T>;
}

export function genFileName(gen: number): string {
  return `${String(gen).padStart(12, "0")}.json`;
}

/** The version for a generation number: its decimal text. */
export function versionOf(gen: number): string {
  return String(gen);
}

function parseVersion(version: string): number | undefined {
  return /^[1-9][0-9]{0,14}$/.test(version) ? Number(version) : undefined;
}

/**
 * I/O: metadata calls and reads/writes of these small files are synchronous (each is a few
 * microseconds; a hop through libuv's thread pool costs more than the call). fsync, the one call
 * that waits for the device, runs on the thread pool so it does not block the event loop.
 */
function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

function quietly(action: () => void): void {
  try {
    action();
  } catch {
    // best effort
  }
}

/** A file's identity for the cache: any rewrite changes size, mtime or ctime (ctime cannot be set back). */
function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

function errno(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String((error as { code: unknown }).code) : undefined;
}

function describe(error: unknown): string {
  return errno(error) ?? (error instanceof Error ? error.message : String(error));
}

/** One kind of object (pools or claims): the CAS protocol plus a small decoded-snapshot cache. */
export class Generations<T> {
  private readonly cache = new Map<string, Cached<T>>();

  constructor(
    private readonly component: string,
    private readonly cacheSize: number,
    /** The store's root: it and everything below are created 0700; missing parents above it 0755. */
    private readonly root: string,
  ) {}

  /** Drops every cached snapshot. */
  clear(): void {
    this.cache.clear();
  }

  unavailable(what: string, path: string, error: unknown): StoreUnavailableError {
    return new StoreUnavailableError(`cannot ${what} ${path}: ${describe(error)}`, { cause: error, component: this.component });
  }

  private conflict(object: string): StoreConflictError {
    return new StoreConflictError(object, { component: this.component });
  }

  private corrupt(path: string, object: string, reason: string, cause?: unknown): StoreCorruptError {
    return new StoreCorruptError(path, `${object}: ${reason}`, { component: this.component, ...(cause === undefined ? {} : { cause }) });
  }

  /** The directory's generations and temp files; undefined when the directory does not exist. */
  async list(dir: string): Promise<Listing | undefined> {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      if (errno(error) === "ENOENT") return undefined;
      throw this.unavailable("list", dir, error);
    }
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

  /** The current generation (a tombstone included); undefined when the object never existed. */
  async read(dir: string, object: string, decode: Decode<T>): Promise<Snapshot<T> | undefined> {
    for (let i = 0; i < RETRIES; i++) {
      const listing = await this.list(dir);
      if (listing?.max === undefined) return undefined;
      const loaded = await this.load(dir, listing.max, object, decode);
      if (loaded !== undefined) return loaded.snapshot;
      // Collected between readdir and open (a newer generation exists), or possibly a stale
      // writer's leftover: look again.
    }
    throw new StoreUnavailableError(`${object} kept changing while being read (${dir})`, { component: this.component });
  }

  /**
   * Loads and decodes generation `gen`, found as the highest one; undefined when the file does not
   * exist any more, or when the directory moved two generations past it while it was being read:
   * only then could the name have been collected and re-used by a stale writer's link (which that
   * writer removes again), so what was read might never have been committed.
   */
  async load(dir: string, gen: number, object: string, decode: Decode<T>): Promise<{ snapshot: Snapshot<T>; links: number } | undefined> {
    const path = join(dir, genFileName(gen));
    let identity: string;
    let links: number;
    try {
      const st = statSync(path, { bigint: true });
      identity = identityOf(st);
      links = Number(st.nlink);
    } catch (error) {
      if (errno(error) === "ENOENT") return undefined;
      throw this.unavailable("stat", path, error);
    }
    const cached = this.cache.get(path);
    if (cached !== undefined && cached.identity === identity) {
      if (!(await this.stillNear(dir, gen))) return undefined;
      this.cache.delete(path);
      this.cache.set(path, cached);
      return { snapshot: cached.snapshot, links };
    }
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      if (errno(error) === "ENOENT") return undefined;
      throw this.unavailable("read", path, error);
    }
    if (!(await this.stillNear(dir, gen))) return undefined;
    const snapshot = this.decodeFile(text, gen, path, object, decode);
    this.put(path, { identity, snapshot });
    return { snapshot, links };
  }

  /** True while no generation above gen + 1 exists (so the file at gen is the one first linked there). */
  private async stillNear(dir: string, gen: number): Promise<boolean> {
    const after = await this.list(dir);
    return after?.max !== undefined && after.max <= gen + 1;
  }

  /** Caches what we just committed under the file's final identity (after the temp link is gone). */
  private remember(path: string, snapshot: Snapshot<T>): void {
    try {
      const st = statSync(path, { bigint: true });
      this.put(path, { identity: identityOf(st), snapshot });
    } catch {
      // collected already: nothing to remember
    }
  }

  private put(path: string, entry: Cached<T>): void {
    this.cache.delete(path);
    this.cache.set(path, entry);
    while (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  private decodeFile(text: string, gen: number, path: string, object: string, decode: Decode<T>): Snapshot<T> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw this.corrupt(path, object, `invalid JSON (${error instanceof Error ? error.message : String(error)})`, error);
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw this.corrupt(path, object, "expected a JSON object");
    const obj = json as Json;
    const header = this.headerOf(obj, path, object);
    if (obj.deleted !== undefined) {
      if (obj.deleted !== true) throw this.corrupt(path, object, '"deleted" must be true when present');
      return { gen, path, header, value: DELETED };
    }
    try {
      return { gen, path, header, value: decode(obj, path, text) };
    } catch (error) {
      if (error instanceof DecodeError) throw this.corrupt(path, object, error.message, error);
      throw error;
    }
  }

  private headerOf(obj: Json, path: string, object: string): Header {
    const commit = obj.commit ?? "";
    const ancestry = obj.ancestry ?? [];
    if (commit !== "" && (typeof commit !== "string" || !COMMIT_ID.test(commit))) {
      throw this.corrupt(path, object, '"commit" must be 16 lower-case hex digits');
    }
    if (!Array.isArray(ancestry) || ancestry.some((a) => typeof a !== "string" || (a !== "" && !COMMIT_ID.test(a)))) {
      throw this.corrupt(path, object, '"ancestry" must be an array of commit ids');
    }
    return { commit: commit as string, ancestry: ancestry as string[] };
  }

  /**
   * The header of one generation and whether it is a tombstone, reading only its first bytes
   * (a file without the standard header prefix is read whole). Undefined when it does not exist.
   */
  async peek(dir: string, gen: number, object: string): Promise<{ header: Header; deleted: boolean } | undefined> {
    const path = join(dir, genFileName(gen));
    let prefix: string;
    try {
      const fd = openSync(path, "r");
      try {
        const buffer = Buffer.alloc(HEADER_BYTES);
        const bytesRead = readSync(fd, buffer, 0, HEADER_BYTES, 0);
        prefix = buffer.subarray(0, bytesRead).toString("utf8");
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if (errno(error) === "ENOENT") return undefined;
      throw this.unavailable("read", path, error);
    }
    const m = HEADER.exec(prefix);
    if (m !== null) {
      const ancestry = m[2] === "" ? [] : (m[2] as string).split(",").map((q) => q.slice(1, -1));
      const rest = prefix.slice(m[0].length);
      return { header: { commit: m[1] as string, ancestry }, deleted: rest.startsWith(`${DELETED_FIELDS}}`) };
    }
    // Not our exact prefix (written by hand?): parse the whole file, body unchecked.
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      if (errno(error) === "ENOENT") return undefined;
      throw this.unavailable("read", path, error);
    }
    const snapshot = this.decodeFile(text, gen, path, object, () => undefined as T);
    return { header: snapshot.header, deleted: snapshot.value === DELETED };
  }

  /**
   * Whether the object currently exists (its highest generation is not a tombstone). A corrupt
   * highest generation counts as existing, so that reading it reports the corruption.
   */
  async exists(dir: string, object: string): Promise<boolean> {
    for (let i = 0; i < RETRIES; i++) {
      const listing = await this.list(dir);
      if (listing?.max === undefined) return false;
      let peeked: { deleted: boolean } | undefined;
      try {
        peeked = await this.peek(dir, listing.max, object);
      } catch (error) {
        if (error instanceof StoreCorruptError) return true;
        throw error;
      }
      if (peeked !== undefined) return !peeked.deleted;
    }
    throw new StoreUnavailableError(`${object} kept changing while being listed (${dir})`, { component: this.component });
  }

  /**
   * Commits `fields` (or a tombstone) as the next generation if the current version is `expected`
   * (undefined: only if the object does not exist or is deleted). Returns the new version.
   * Throws StoreConflictError, having changed nothing visible, when the version moved on.
   */
  async commit(
    dir: string,
    object: string,
    expected: string | undefined,
    fields: string | Deleted,
    decode: Decode<T>,
    /** What reading the new generation back would decode to, when the caller knows: cached. */
    value?: T,
  ): Promise<string> {
    const expectedGen = expected === undefined ? undefined : parseVersion(expected);
    if (expected !== undefined && expectedGen === undefined) throw this.conflict(object);

    let listing = await this.list(dir);
    if (listing === undefined) {
      if (expectedGen !== undefined) throw this.conflict(object);
      await this.ensureDir(dir);
      listing = { gens: [], max: undefined, temps: [] };
    }
    let base: Snapshot<T> | undefined;
    if (listing.max === undefined) {
      if (expectedGen !== undefined) throw this.conflict(object);
    } else {
      if (expectedGen !== undefined && expectedGen !== listing.max) throw this.conflict(object);
      // Decoding the base also refuses to write on top of a corrupt generation (never reset silently).
      const loaded = await this.load(dir, listing.max, object, decode);
      if (loaded === undefined) throw this.conflict(object); // collected: a newer generation exists
      base = loaded.snapshot;
      const baseDeleted = base.value === DELETED;
      if (expectedGen === undefined ? !baseDeleted : baseDeleted) throw this.conflict(object);
      // Its writer's temp link still exists: it has not settled yet. Tell it that we build on it.
      if (loaded.links > 1 && base.header.commit !== "") this.acknowledge(dir, base.header.commit);
    }

    const target = (listing.max ?? 0) + 1;
    const commit = randomBytes(8).toString("hex");
    const ancestry = base === undefined ? [] : [base.header.commit, ...base.header.ancestry].slice(0, ANCESTRY);
    const header = `{"commit":"${commit}","ancestry":[${ancestry.map((a) => `"${a}"`).join(",")}],`;
    const text = `${header}${fields === DELETED ? DELETED_FIELDS : fields}}\n`;
    const targetPath = join(dir, genFileName(target));

    const temp = await this.writeTemp(dir, text);
    let settled: Listing;
    try {
      try {
        linkSync(temp, targetPath);
      } catch (error) {
        if (errno(error) === "EEXIST") throw this.conflict(object);
        throw this.unavailable("commit", targetPath, error);
      }
      const outcome = await this.settle(dir, target, commit, object);
      if (outcome.kind === "stale") {
        // Our link re-used a collected slot number behind newer generations: nobody reads it; remove it.
        quietly(() => unlinkSync(targetPath));
        throw this.conflict(object);
      }
      if (outcome.kind === "unknown") {
        throw new StoreUnavailableError(`commit of ${object} as ${targetPath} has an unknown outcome (${outcome.reason}); read it again`, {
          component: this.component,
        });
      }
      settled = outcome.listing;
    } finally {
      quietly(() => unlinkSync(temp));
      quietly(() => unlinkSync(join(dir, `${ACK_PREFIX}${commit}`)));
    }
    await this.fsyncDir(dir);
    if (fields === DELETED || value !== undefined) {
      this.remember(targetPath, {
        gen: target,
        path: targetPath,
        header: { commit, ancestry },
        value: fields === DELETED ? DELETED : (value as T),
      });
    }
    this.collect(dir, target, settled);
    return versionOf(target);
  }

  /**
   * After linking `target`: is our commit part of the object's history? The highest generation
   * is never removed (only generations two below a newer one are), so if a newer generation had
   * existed when we linked, it (or a successor) is still there and its ancestry, which records
   * the commit id of the first file ever linked at each of the last slots, does not name us.
   * Further back than the ancestry reaches, the ack decides: whoever built on our file found our
   * temp link still there (we remove it only after this check) and created `.ack-<our commit>`
   * before linking; nobody builds on a file that was not the highest, so a stale link gets none.
   */
  private async settle(
    dir: string,
    target: number,
    commit: string,
    object: string,
  ): Promise<{ kind: "ok"; listing: Listing } | { kind: "stale" } | { kind: "unknown"; reason: string }> {
    for (let i = 0; i < RETRIES; i++) {
      const listing = await this.list(dir);
      if (listing?.max === undefined || listing.max < target) return { kind: "unknown", reason: "the object directory was emptied" };
      if (listing.max === target) return { kind: "ok", listing };
      const peeked = await this.peek(dir, listing.max, object);
      if (peeked === undefined) continue;
      const distance = listing.max - target;
      if (distance <= peeked.header.ancestry.length) {
        return peeked.header.ancestry[distance - 1] === commit ? { kind: "ok", listing } : { kind: "stale" };
      }
      return this.acknowledged(dir, commit) ? { kind: "ok", listing } : { kind: "stale" };
    }
    return { kind: "unknown", reason: "the object kept changing" };
  }

  /** Creates `.ack-<commit>` (see settle); it may exist already. */
  private acknowledge(dir: string, commit: string): void {
    const path = join(dir, `${ACK_PREFIX}${commit}`);
    try {
      closeSync(openSync(path, "wx", 0o600));
    } catch (error) {
      if (errno(error) !== "EEXIST") throw this.unavailable("create", path, error);
    }
  }

  private acknowledged(dir: string, commit: string): boolean {
    const path = join(dir, `${ACK_PREFIX}${commit}`);
    try {
      statSync(path);
      return true;
    } catch (error) {
      if (errno(error) === "ENOENT") return false;
      throw this.unavailable("stat", path, error);
    }
  }

  private async writeTemp(dir: string, text: string): Promise<string> {
    const path = join(dir, `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString("hex")}`);
    let fd: number;
    try {
      fd = openSync(path, "wx", 0o600);
    } catch (error) {
      throw this.unavailable("create", path, error);
    }
    try {
      fchmodSync(fd, 0o600); // exact mode whatever the umask
      writeFileSync(fd, text, "utf8");
      await fsyncAsync(fd);
    } catch (error) {
      quietly(() => closeSync(fd));
      quietly(() => unlinkSync(path));
      throw this.unavailable("write", path, error);
    }
    try {
      closeSync(fd);
    } catch (error) {
      quietly(() => unlinkSync(path));
      throw this.unavailable("write", path, error);
    }
    return path;
  }

  /** Best effort: removes generations older than the previous one, and stale temp files. */
  private collect(dir: string, target: number, listing: Listing): void {
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

  async fsyncDir(dir: string): Promise<void> {
    try {
      const fd = openSync(dir, "r");
      try {
        await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      throw this.unavailable("sync", dir, error);
    }
  }

  /** mkdir -p: mode 0700 for the root and below, exactly (whatever the umask); an fsync of each new directory's parent. */
  async ensureDir(dir: string): Promise<void> {
    const ours = dir === this.root || dir.startsWith(`${this.root}${sep}`);
    try {
      mkdirSync(dir, { mode: ours ? 0o700 : 0o755 });
    } catch (error) {
      const code = errno(error);
      if (code === "EEXIST") return;
      if (code === "ENOENT" && dirname(dir) !== dir) {
        await this.ensureDir(dirname(dir));
        return this.ensureDir(dir);
      }
      throw this.unavailable("create directory", dir, error);
    }
    try {
      if (ours) chmodSync(dir, 0o700);
    } catch (error) {
      throw this.unavailable("chmod", dir, error);
    }
    await this.fsyncDir(dirname(dir));
  }
}
