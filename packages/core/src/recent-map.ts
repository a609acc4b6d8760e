/**
 * A map of at most `limit` entries that forgets the least recently set one first: the bounded
 * memory of core's caches (withOwnClaimMemory, PoolCache).
 */
export class RecentMap<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    const oldest = this.entries.keys().next();
    if (this.entries.size > this.limit && oldest.done !== true) this.entries.delete(oldest.value);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}
