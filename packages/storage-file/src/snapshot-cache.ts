import { statSync } from "node:fs";
import { identityOf, type Snapshot } from "./generation-format.js";

interface Cached<T> {
  readonly identity: string;
  readonly snapshot: Snapshot<T>;
}

/**
 * A small least-recently-used cache of decoded generations, by file path. An entry is valid only
 * while the file keeps the identity it was cached under (see identityOf).
 */
export class SnapshotCache<T> {
  private readonly entries = new Map<string, Cached<T>>();

  constructor(private readonly size: number) {}

  /** Drops every cached snapshot. */
  clear(): void {
    this.entries.clear();
  }

  /** The entry cached for `path` when the file still has `identity`; does not count as a use. */
  lookup(path: string, identity: string): Cached<T> | undefined {
    const cached = this.entries.get(path);
    return cached !== undefined && cached.identity === identity ? cached : undefined;
  }

  /** Marks an entry found by lookup as the most recently used. */
  touch(path: string, entry: Cached<T>): void {
    this.entries.delete(path);
    this.entries.set(path, entry);
  }

  /** Caches what we just committed under the file's final identity (after the temp link is gone). */
  remember(path: string, snapshot: Snapshot<T>): void {
    try {
      const st = statSync(path, { bigint: true });
      this.put(path, { identity: identityOf(st), snapshot });
    } catch {
      // collected already: nothing to remember
    }
  }

  put(path: string, entry: Cached<T>): void {
    this.entries.delete(path);
    this.entries.set(path, entry);
    while (this.entries.size > this.size) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
