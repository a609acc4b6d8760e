import { type KubeObject, meta, str } from "./json.js";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One write. `object` is the state after it (for DELETED: the last state, at the deletion's resourceVersion). */
export interface StoreEvent {
  readonly rv: number;
  readonly plural: string;
  readonly type: EventType;
  readonly object: KubeObject;
  /** The state before (undefined for ADDED). */
  readonly previous: KubeObject | undefined;
  readonly bytes: number;
}

export interface StoreOptions {
  /** Events kept for watches from a resourceVersion and for paginated lists. */
  historyEvents: number;
  /** ...and at most this many bytes of them. */
  historyBytes: number;
}

/** `<namespace>/<name>`: the order etcd keeps keys in, and so the order of every list. */
export function objectKey(object: KubeObject): string {
  const m = meta(object);
  return `${str(m, "namespace")}/${str(m, "name")}`;
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The index of the first of the sorted `keys` that sorts after `after`. */
function firstAfter(keys: readonly string[], after: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((keys[mid] as string) > after) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * All objects, one resourceVersion counter for the whole server (like etcd's revision), and a
 * bounded history of writes: enough to replay a watch from a resourceVersion and to list the
 * state as of an older resourceVersion (the consistent snapshot behind `continue`).
 */
export class ObjectStore {
  #rv = 0;
  #compactedThrough = 0;
  #history: StoreEvent[] = [];
  #historyBytes = 0;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  /** Per kind, its objects in key order as of the last write (see #sortedNow). */
  readonly #sorted = new Map<string, { keys: string[]; objects: KubeObject[] }>();
  readonly #listeners = new Set<(event: StoreEvent) => void>();

  constructor(private readonly options: StoreOptions) {}

  get resourceVersion(): number {
    return this.#rv;
  }

  /** Events at or below this resourceVersion are gone. */
  get compactedThrough(): number {
    return this.#compactedThrough;
  }

  #kind(plural: string): Map<string, KubeObject> {
    let objects = this.#objects.get(plural);
    if (objects === undefined) {
      objects = new Map();
      this.#objects.set(plural, objects);
    }
    return objects;
  }

  get(plural: string, namespace: string, name: string): KubeObject | undefined {
    return this.#objects.get(plural)?.get(`${namespace}/${name}`);
  }

  /** The kind's current objects in key order, sorted again only after a write of that kind. */
  #sortedNow(plural: string): { keys: string[]; objects: KubeObject[] } {
    let sorted = this.#sorted.get(plural);
    if (sorted === undefined) {
      const entries = [...this.#kind(plural).entries()].sort(([a], [b]) => byKey(a, b));
      sorted = { keys: entries.map(([key]) => key), objects: entries.map(([, object]) => object) };
      this.#sorted.set(plural, sorted);
    }
    return sorted;
  }

  /**
   * The kind's objects as of `rv` (default: now), in key order, only those whose key sorts after
   * `after` (a continue token's last key); undefined when that state is compacted away. A page of a
   * list over an unchanged kind costs a binary search and the objects after it, not a sort.
   */
  list(plural: string, namespace: string | undefined, rv = this.#rv, after = ""): KubeObject[] | undefined {
    if (rv < this.#compactedThrough) return undefined;
    const inNamespace = (key: string) => namespace === undefined || key.startsWith(`${namespace}/`);
    if (!this.#writtenAfter(plural, rv)) {
      const { keys, objects } = this.#sortedNow(plural);
      const from = namespace === undefined || after >= `${namespace}/` ? after : `${namespace}/`;
      const out: KubeObject[] = [];
      for (let i = firstAfter(keys, from); i < keys.length; i++) {
        const key = keys[i] as string;
        if (!inNamespace(key)) break; // one namespace's keys are contiguous
        out.push(objects[i] as KubeObject);
      }
      return out;
    }
    const state = new Map(this.#kind(plural));
    for (let i = this.#history.length - 1; i >= 0; i--) {
      const event = this.#history[i];
      if (event === undefined || event.rv <= rv) break;
      if (event.plural !== plural) continue;
      if (event.previous === undefined) state.delete(objectKey(event.object));
      else state.set(objectKey(event.previous), event.previous);
    }
    return [...state.entries()]
      .filter(([key]) => key > after && inNamespace(key))
      .sort(([a], [b]) => byKey(a, b))
      .map(([, o]) => o);
  }

  /** Whether the kind was written after `rv` (its state then differs from now). */
  #writtenAfter(plural: string, rv: number): boolean {
    for (let i = this.#history.length - 1; i >= 0; i--) {
      const event = this.#history[i];
      if (event === undefined || event.rv <= rv) return false;
      if (event.plural === plural) return true;
    }
    return false;
  }

  /** Every write after `rv`, oldest first; undefined when some were compacted away. */
  eventsAfter(rv: number): StoreEvent[] | undefined {
    if (rv < this.#compactedThrough) return undefined;
    return this.#history.filter((e) => e.rv > rv);
  }

  /**
   * Commits one write at the next resourceVersion. `build` gets that resourceVersion and returns
   * the object to store (or to delete, for DELETED); if it throws, nothing is written.
   */
  write(
    plural: string,
    type: EventType,
    previous: KubeObject | undefined,
    build: (rv: string) => { object: KubeObject; bytes: number },
  ): StoreEvent {
    const rv = this.#rv + 1;
    const { object, bytes } = build(String(rv));
    const objects = this.#kind(plural);
    this.#sorted.delete(plural);
    if (type === "DELETED") objects.delete(objectKey(object));
    else objects.set(objectKey(object), object);
    this.#rv = rv;
    const event: StoreEvent = { rv, plural, type, object, previous, bytes };
    this.#history.push(event);
    this.#historyBytes += bytes;
    while (
      this.#history.length > this.options.historyEvents ||
      (this.#historyBytes > this.options.historyBytes && this.#history.length > 1)
    ) {
      const dropped = this.#history.shift();
      if (dropped === undefined) break;
      this.#historyBytes -= dropped.bytes;
      this.#compactedThrough = dropped.rv;
    }
    for (const listener of this.#listeners) listener(event);
    return event;
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
