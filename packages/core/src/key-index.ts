/**
 * A persistent map from key text to a value: a two-level hash trie (256 × 256 slots, small leaf
 * arrays). set/delete copy two 256-slot arrays and one leaf, whatever the map's size.
 */
type Leaf<V> = readonly (readonly [string, V])[];
type Mid<V> = readonly (Leaf<V> | undefined)[];
type Root<V> = readonly (Mid<V> | undefined)[];

const FAN = 256;

function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class KeyIndex<V> {
  private constructor(
    private readonly root: Root<V>,
    readonly size: number,
  ) {}

  static empty<V>(): KeyIndex<V> {
    return new KeyIndex<V>(new Array<Mid<V> | undefined>(FAN).fill(undefined), 0);
  }

  /**
   * Builds an index from entries in one pass (no per-entry copying). A repeated key is reported
   * through `onDuplicate` with the value already stored, and the first value is kept.
   */
  static fromEntries<V>(entries: Iterable<readonly [string, V]>, onDuplicate: (key: string, first: V, second: V) => void): KeyIndex<V> {
    const root: ((readonly [string, V])[] | undefined)[][] = new Array(FAN);
    let size = 0;
    for (const [key, value] of entries) {
      const h = hash(key);
      const mid: ((readonly [string, V])[] | undefined)[] = root[h & 0xff] ?? new Array(FAN).fill(undefined);
      root[h & 0xff] = mid;
      const leaf = mid[(h >>> 8) & 0xff] ?? [];
      mid[(h >>> 8) & 0xff] = leaf;
      const existing = leaf.find(([k]) => k === key);
      if (existing !== undefined) {
        onDuplicate(key, existing[1], value);
        continue;
      }
      leaf.push([key, value]);
      size += 1;
    }
    return new KeyIndex<V>(root as Root<V>, size);
  }

  get(key: string): V | undefined {
    const h = hash(key);
    const leaf = this.root[h & 0xff]?.[(h >>> 8) & 0xff];
    if (leaf === undefined) return undefined;
    for (const [k, v] of leaf) if (k === key) return v;
    return undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: V): KeyIndex<V> {
    return this.update(key, (leaf) => {
      const rest = leaf.filter(([k]) => k !== key);
      return { leaf: [...rest, [key, value] as const], delta: rest.length === leaf.length ? 1 : 0 };
    });
  }

  delete(key: string): KeyIndex<V> {
    if (!this.has(key)) return this;
    return this.update(key, (leaf) => ({ leaf: leaf.filter(([k]) => k !== key), delta: -1 }));
  }

  private update(key: string, change: (leaf: Leaf<V>) => { leaf: Leaf<V>; delta: number }): KeyIndex<V> {
    const h = hash(key);
    const r = h & 0xff;
    const m = (h >>> 8) & 0xff;
    const mid = this.root[r] ?? new Array<Leaf<V> | undefined>(FAN).fill(undefined);
    const { leaf, delta } = change(mid[m] ?? []);
    const nextMid = mid.slice();
    nextMid[m] = leaf.length === 0 ? undefined : leaf;
    const nextRoot = this.root.slice();
    nextRoot[r] = nextMid;
    return new KeyIndex(nextRoot, this.size + delta);
  }
}
