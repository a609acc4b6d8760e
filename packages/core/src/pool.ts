import { PoolCorruptError } from "./errors.js";
import { type Cidr, formatIp, ipAt } from "./ip.js";
import { type AttachmentKey, formatKey } from "./key.js";
import { KeyIndex } from "./key-index.js";
import type { Reservation } from "./reservation.js";
import { SortedList } from "./sorted-list.js";

export interface PoolInit {
  /** Name used in errors (the store's pool id). */
  name?: string;
  /** Round-robin cursor: the offset of the last allocation. */
  lastOffset?: bigint;
}

/**
 * A pool's state: the reservations of one CIDR, in one stable order (by offset) whatever order
 * they were read in. Immutable; every change returns a new Pool sharing structure with the old.
 */
export class Pool {
  private constructor(
    readonly cidr: Cidr,
    readonly name: string,
    private readonly byOffset: SortedList<Reservation>,
    private readonly byKey: KeyIndex<bigint>,
    readonly lastOffset: bigint | undefined,
  ) {}

  static empty(cidr: Cidr, init: PoolInit = {}): Pool {
    return new Pool(cidr, init.name ?? cidr.text, SortedList.empty(), KeyIndex.empty(), init.lastOffset);
  }

  /**
   * Builds a pool from reservations in any order. Two reservations at one offset, one key at two
   * offsets, or an offset outside the CIDR are reported as corruption — never merged or dropped.
   */
  static fromReservations(cidr: Cidr, reservations: Iterable<Reservation>, init: PoolInit = {}): Pool {
    const name = init.name ?? cidr.text;
    const input = Array.isArray(reservations) ? (reservations as readonly Reservation[]) : [...reservations];
    // Stores usually hand over reservations already in offset order: check before sorting.
    let ordered = true;
    for (let i = 1; i < input.length && ordered; i++) ordered = (input[i - 1] as Reservation).offset < (input[i] as Reservation).offset;
    const sorted = ordered ? input : [...input].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    for (let i = 0; i < sorted.length; i++) {
      const r = sorted[i] as Reservation;
      if (r.offset < 0n || r.offset >= cidr.size) {
        throw new PoolCorruptError(name, `offset ${r.offset} is outside ${cidr.text}`);
      }
      const prev = sorted[i - 1];
      if (prev !== undefined && prev.offset === r.offset) {
        throw new PoolCorruptError(
          name,
          `two reservations at ${formatIp(ipAt(cidr, r.offset))} (${formatKey(prev.key)} and ${formatKey(r.key)})`,
        );
      }
    }
    const byKey = KeyIndex.fromEntries<bigint>(
      sorted.map((r) => [formatKey(r.key), r.offset] as const),
      (keyText, first, second) => {
        throw new PoolCorruptError(
          name,
          `key ${keyText} holds two addresses (${formatIp(ipAt(cidr, first))} and ${formatIp(ipAt(cidr, second))})`,
        );
      },
    );
    return new Pool(cidr, name, SortedList.fromSorted(sorted), byKey, init.lastOffset);
  }

  get size(): number {
    return this.byOffset.size;
  }

  /** All reservations, ordered by offset. */
  reservations(): Reservation[] {
    return this.byOffset.toArray();
  }

  [Symbol.iterator](): IterableIterator<Reservation> {
    return this.byOffset[Symbol.iterator]();
  }

  atOffset(offset: bigint): Reservation | undefined {
    return this.byOffset.get(offset);
  }

  forKey(key: AttachmentKey): Reservation | undefined {
    const offset = this.byKey.get(formatKey(key));
    return offset === undefined ? undefined : this.byOffset.get(offset);
  }

  /** @internal the offset-ordered list, for the allocator's free-space search. */
  get list(): SortedList<Reservation> {
    return this.byOffset;
  }

  /** A new pool holding `reservation` in addition (its offset and key must be free). */
  with(reservation: Reservation, options: { moveCursor?: boolean } = {}): Pool {
    const keyText = formatKey(reservation.key);
    if (this.byOffset.get(reservation.offset) !== undefined || this.byKey.has(keyText)) {
      throw new PoolCorruptError(this.name, `refusing to add ${keyText} at offset ${reservation.offset}: taken`);
    }
    return new Pool(
      this.cidr,
      this.name,
      this.byOffset.insert(reservation),
      this.byKey.set(keyText, reservation.offset),
      options.moveCursor === false ? this.lastOffset : reservation.offset,
    );
  }

  /** A new pool with the round-robin cursor at `lastOffset` (same reservations). */
  withCursor(lastOffset: bigint | undefined): Pool {
    return lastOffset === this.lastOffset ? this : new Pool(this.cidr, this.name, this.byOffset, this.byKey, lastOffset);
  }

  /** A new pool without the reservation of exactly this key (the same pool when it holds none). */
  without(key: AttachmentKey): Pool {
    const keyText = formatKey(key);
    const offset = this.byKey.get(keyText);
    if (offset === undefined) return this;
    return new Pool(this.cidr, this.name, this.byOffset.remove(offset), this.byKey.delete(keyText), this.lastOffset);
  }
}
