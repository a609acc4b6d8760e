/**
 * One queue per key: calls for the same pool from this node run one after another, so they never
 * conflict with each other (conflicts then come only from other nodes). Different keys run at once.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Waits for the key's earlier holders; resolves with the function that lets the next one in. */
  async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }

  /** Keys with a holder or waiters. */
  get size(): number {
    return this.tails.size;
  }
}
