/**
 * A persistent map from key text to a value, backed by one native Map (Baker's "rerooting"
 * technique). The version that was changed last owns the Map; every older version holds the one
 * entry in which it differs from a newer version. Used linearly — read, change, drop the old one,
 * which is how pools are used — every operation is O(1) at native Map speed, and building one
 * from n entries is a plain loop. Reading an older version first walks the diffs back to it
 * (O(distance)); it is always correct, only slower.
 */
interface Root<V> {
  readonly kind: "root";
  readonly map: Map<string, V>;
}

interface Diff<V> {
  readonly kind: "diff";
  /** This version equals `next` with `key` set to `value` (or absent when `value` is undefined). */
  readonly key: string;
  readonly value: V | undefined;
  readonly next: KeyIndex<V>;
}

export class KeyIndex<V> {
  private node: Root<V> | Diff<V>;

  private constructor(
    node: Root<V> | Diff<V>,
    readonly size: number,
  ) {
    this.node = node;
  }

  static empty<V>(): KeyIndex<V> {
    return new KeyIndex<V>({ kind: "root", map: new Map() }, 0);
  }

  /**
   * Builds an index from entries in one pass. A repeated key is reported through `onDuplicate`
   * with the value already stored, and the first value is kept.
   */
  static fromEntries<V>(entries: Iterable<readonly [string, V]>, onDuplicate: (key: string, first: V, second: V) => void): KeyIndex<V> {
    const map = new Map<string, V>();
    for (const [key, value] of entries) {
      const first = map.get(key);
      if (first !== undefined) onDuplicate(key, first, value);
      else map.set(key, value);
    }
    return new KeyIndex<V>({ kind: "root", map }, map.size);
  }

  get(key: string): V | undefined {
    return this.reroot().get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: V): KeyIndex<V> {
    return this.change(key, value);
  }

  delete(key: string): KeyIndex<V> {
    return this.has(key) ? this.change(key, undefined) : this;
  }

  private change(key: string, value: V | undefined): KeyIndex<V> {
    const map = this.reroot();
    const previous = map.get(key);
    if (value === undefined) map.delete(key);
    else map.set(key, value);
    const next = new KeyIndex<V>({ kind: "root", map }, map.size);
    this.node = { kind: "diff", key, value: previous, next };
    return next;
  }

  /** Makes this version own the Map (reversing the diffs between it and the current owner) and returns the Map. */
  private reroot(): Map<string, V> {
    if (this.node.kind === "root") return this.node.map;
    const path: KeyIndex<V>[] = [];
    let at: KeyIndex<V> = this;
    while (at.node.kind === "diff") {
      path.push(at);
      at = at.node.next;
    }
    const map = at.node.map;
    // Walk back from the owner: each step moves ownership one version closer to `this`.
    for (let i = path.length - 1; i >= 0; i--) {
      const version = path[i] as KeyIndex<V>;
      const diff = version.node as Diff<V>;
      const newer = diff.next;
      const current = map.get(diff.key);
      if (diff.value === undefined) map.delete(diff.key);
      else map.set(diff.key, diff.value);
      newer.node = { kind: "diff", key: diff.key, value: current, next: version };
      version.node = { kind: "root", map };
    }
    return map;
  }
}
