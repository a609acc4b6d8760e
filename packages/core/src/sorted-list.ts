/**
 * A persistent (immutable, structurally shared) list of items sorted by a unique bigint `offset`.
 * Stored as chunks of at most MAX_CHUNK (1024) items, so an insert or removal copies one chunk and the
 * chunk index — never the whole list. Lookups and "end of a consecutive run" are O(log n).
 */
export interface HasOffset {
  readonly offset: bigint;
}

const MAX_CHUNK = 1024;
const INITIAL_CHUNK = 512;

export class SortedList<T extends HasOffset> {
  private constructor(
    private readonly chunks: readonly (readonly T[])[],
    /** starts[i] = number of items before chunk i. */
    private readonly starts: readonly number[],
    readonly size: number,
  ) {}

  static empty<T extends HasOffset>(): SortedList<T> {
    return new SortedList<T>([], [], 0);
  }

  /** Builds from items already sorted by strictly increasing offset. */
  static fromSorted<T extends HasOffset>(items: readonly T[]): SortedList<T> {
    const chunks: T[][] = [];
    for (let i = 0; i < items.length; i += INITIAL_CHUNK) chunks.push(items.slice(i, i + INITIAL_CHUNK));
    return SortedList.fromChunks(chunks);
  }

  private static fromChunks<T extends HasOffset>(chunks: readonly (readonly T[])[]): SortedList<T> {
    const starts: number[] = new Array(chunks.length);
    let total = 0;
    for (let i = 0; i < chunks.length; i++) {
      starts[i] = total;
      total += (chunks[i] as readonly T[]).length;
    }
    return new SortedList(chunks, starts, total);
  }

  /** Index of the chunk that would hold `offset` (the last chunk whose first offset <= offset; 0 if none). */
  private chunkFor(offset: bigint): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    let found = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const first = (this.chunks[mid] as readonly T[])[0] as T;
      if (first.offset <= offset) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }

  /** Position of the first item with offset >= `offset` inside `chunk`. */
  private static lowerBound<T extends HasOffset>(chunk: readonly T[], offset: bigint): number {
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((chunk[mid] as T).offset < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(offset: bigint): T | undefined {
    if (this.size === 0) return undefined;
    const chunk = this.chunks[this.chunkFor(offset)] as readonly T[];
    const item = chunk[SortedList.lowerBound(chunk, offset)];
    return item !== undefined && item.offset === offset ? item : undefined;
  }

  /** Global index of the first item with offset >= `offset` (== size when none). */
  indexAtOrAfter(offset: bigint): number {
    if (this.size === 0) return 0;
    const c = this.chunkFor(offset);
    return (this.starts[c] as number) + SortedList.lowerBound(this.chunks[c] as readonly T[], offset);
  }

  /** The item at global index `index`. */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.size) return undefined;
    const c = this.chunkOfIndex(index);
    return (this.chunks[c] as readonly T[])[index - (this.starts[c] as number)];
  }

  /** The chunk holding global index `index` (0 <= index < size). */
  private chunkOfIndex(index: number): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] as number) <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * The last index j >= i such that items i..j have consecutive offsets
   * (offset[j] - offset[i] === j - i). Offsets are strictly increasing, so the predicate is monotone:
   * first find the last chunk whose last item still satisfies it, then search inside the next chunk.
   */
  runEnd(i: number): number {
    const base = (this.at(i) as T).offset;
    const holds = (chunk: number, pos: number) =>
      ((this.chunks[chunk] as readonly T[])[pos] as T).offset - base === BigInt((this.starts[chunk] as number) + pos - i);
    const lastPos = (chunk: number) => (this.chunks[chunk] as readonly T[]).length - 1;
    let c = this.chunkOfIndex(i);
    if (holds(c, lastPos(c))) {
      let lo = c;
      let hi = this.chunks.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (holds(mid, lastPos(mid))) lo = mid;
        else hi = mid - 1;
      }
      if (lo === this.chunks.length - 1) return this.size - 1;
      c = lo + 1; // the run ends inside chunk c (its first item may already break it)
      if (!holds(c, 0)) return (this.starts[c] as number) - 1;
    }
    // inside chunk c: the last position that holds, starting from a position known to hold
    let lo = Math.max(0, i - (this.starts[c] as number));
    let hi = lastPos(c);
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (holds(c, mid)) lo = mid;
      else hi = mid - 1;
    }
    return (this.starts[c] as number) + lo;
  }

  /** A new list with `item` added. The caller guarantees its offset is not present. */
  insert(item: T): SortedList<T> {
    if (this.size === 0) return SortedList.fromChunks([[item]]);
    const c = this.chunkFor(item.offset);
    const chunk = this.chunks[c] as readonly T[];
    const pos = SortedList.lowerBound(chunk, item.offset);
    const next = chunk.slice();
    next.splice(pos, 0, item);
    const chunks = this.chunks.slice();
    if (next.length > MAX_CHUNK) {
      const half = next.length >> 1;
      chunks.splice(c, 1, next.slice(0, half), next.slice(half));
    } else {
      chunks[c] = next;
    }
    return SortedList.fromChunks(chunks);
  }

  /** A new list without the item at `offset` (the same list when absent). */
  remove(offset: bigint): SortedList<T> {
    if (this.size === 0) return this;
    const c = this.chunkFor(offset);
    const chunk = this.chunks[c] as readonly T[];
    const pos = SortedList.lowerBound(chunk, offset);
    if ((chunk[pos] as T | undefined)?.offset !== offset) return this;
    const chunks = this.chunks.slice();
    if (chunk.length === 1) chunks.splice(c, 1);
    else {
      const next = chunk.slice();
      next.splice(pos, 1);
      chunks[c] = next;
    }
    return SortedList.fromChunks(chunks);
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (const chunk of this.chunks) yield* chunk;
  }

  toArray(): T[] {
    return this.chunks.flat() as T[];
  }
}
