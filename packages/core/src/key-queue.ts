import { type AttachmentKey, formatKey } from "./key.js";

/**
 * Runs one process's calls for one attachment key in order, calls for other keys at once. The
 * runtime never calls one attachment in parallel (CNI), but a process can still be handed two
 * calls of one key at once (a runtime retrying an ADD whose first call is still running); on a
 * store without transactions the second would then choose its block from reads the first is
 * about to make stale. The queue of a key is dropped when it empties.
 */
export function keyQueue(): <T>(key: AttachmentKey, call: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: AttachmentKey, call: () => Promise<T>): Promise<T> => {
    const id = formatKey(key);
    const before = tails.get(id) ?? Promise.resolve();
    const run = before.then(call, call);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(id, tail);
    void tail.then(() => {
      if (tails.get(id) === tail) tails.delete(id);
    });
    return run;
  };
}
