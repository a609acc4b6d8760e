import { linkSync, readdirSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { StoreConflictError, StoreCorruptError, StoreUnavailableError } from "@ipamkit/core";
import { acknowledge, collectGarbage, ensureDirectory, fsyncDirectory, type Unavailable, writeTemp } from "./generation-commit.js";
import {
  ackFileName,
  ancestryAfter,
  type Corrupt,
  DELETED,
  type Decode,
  type Deleted,
  describe,
  errno,
  generationText,
  genFileName,
  type Header,
  headerFromPrefix,
  identityOf,
  type Listing,
  listingOf,
  newCommitId,
  parseGeneration,
  parseVersion,
  quietly,
  type Snapshot,
  versionOf,
} from "./generation-format.js";
import { RETRIES, readPrefix, readText, settle } from "./generation-read.js";
import { SnapshotCache } from "./snapshot-cache.js";

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
 *
 * The file format (names, header, tombstones) is in generation-format.ts; temp and ack files,
 * garbage collection and directory creation are in generation-commit.ts; reading a generation
 * file and settling a commit are in generation-read.ts.
 */

/** One kind of object (pools or claims): the CAS protocol plus a small decoded-snapshot cache. */
export class Generations<T> {
  private readonly cache: SnapshotCache<T>;
  /** {@link Generations.unavailable}, bound, for the functions of generation-commit.ts. */
  private readonly fail: Unavailable = (what, path, error) => this.unavailable(what, path, error);

  constructor(
    private readonly component: string,
    cacheSize: number,
    /** The store's root: it and everything below are created 0700; missing parents above it 0755. */
    private readonly root: string,
  ) {
    this.cache = new SnapshotCache(cacheSize);
  }

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

  /** Reports malformed content in `path` (a generation of `object`). */
  private corrupt(path: string, object: string): Corrupt {
    return (reason, cause) =>
      new StoreCorruptError(path, `${object}: ${reason}`, { component: this.component, ...(cause === undefined ? {} : { cause }) });
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
    return listingOf(names);
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
    const cached = this.cache.lookup(path, identity);
    if (cached !== undefined) {
      if (!(await this.stillNear(dir, gen))) return undefined;
      this.cache.touch(path, cached);
      return { snapshot: cached.snapshot, links };
    }
    const text = readText(path, this.fail);
    if (text === undefined) return undefined;
    if (!(await this.stillNear(dir, gen))) return undefined;
    const snapshot = parseGeneration(text, gen, path, decode, this.corrupt(path, object));
    this.cache.put(path, { identity, snapshot });
    return { snapshot, links };
  }

  /** True while no generation above gen + 1 exists (so the file at gen is the one first linked there). */
  private async stillNear(dir: string, gen: number): Promise<boolean> {
    const after = await this.list(dir);
    return after?.max !== undefined && after.max <= gen + 1;
  }

  /**
   * The header of one generation and whether it is a tombstone, reading only its first bytes
   * (a file without the standard header prefix is read whole). Undefined when it does not exist.
   */
  async peek(dir: string, gen: number, object: string): Promise<{ header: Header; deleted: boolean } | undefined> {
    const path = join(dir, genFileName(gen));
    const prefix = readPrefix(path, this.fail);
    if (prefix === undefined) return undefined;
    const standard = headerFromPrefix(prefix);
    if (standard !== undefined) return standard;
    // Not our exact prefix (written by hand?): parse the whole file, body unchecked.
    const text = readText(path, this.fail);
    if (text === undefined) return undefined;
    const snapshot = parseGeneration(text, gen, path, () => undefined as T, this.corrupt(path, object));
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
      if (loaded.links > 1 && base.header.commit !== "") acknowledge(dir, base.header.commit, this.fail);
    }

    const target = (listing.max ?? 0) + 1;
    const commit = newCommitId();
    const ancestry = ancestryAfter(base?.header);
    const text = generationText(commit, ancestry, fields);
    const targetPath = join(dir, genFileName(target));

    const temp = await writeTemp(dir, text, this.fail);
    let settled: Listing;
    try {
      try {
        linkSync(temp, targetPath);
      } catch (error) {
        if (errno(error) === "EEXIST") throw this.conflict(object);
        throw this.unavailable("commit", targetPath, error);
      }
      const outcome = await settle({ view: this, dir, target, commit, object, unavailable: this.fail });
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
      quietly(() => unlinkSync(join(dir, ackFileName(commit))));
    }
    await this.fsyncDir(dir);
    if (fields === DELETED || value !== undefined) {
      this.cache.remember(targetPath, {
        gen: target,
        path: targetPath,
        header: { commit, ancestry },
        value: fields === DELETED ? DELETED : (value as T),
      });
    }
    collectGarbage(dir, target, settled);
    return versionOf(target);
  }

  async fsyncDir(dir: string): Promise<void> {
    return fsyncDirectory(dir, this.fail);
  }

  /** mkdir -p: mode 0700 for the root and below, exactly (whatever the umask); an fsync of each new directory's parent. */
  async ensureDir(dir: string): Promise<void> {
    return ensureDirectory(dir, this.root, this.fail);
  }
}
