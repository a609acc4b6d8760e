import { PoolCorruptError } from "./errors.js";
import { type Cidr, formatIp, ipAt } from "./ip.js";
import { type AttachmentKey, formatKey, isLegacyKey } from "./key.js";
import { KeyIndex } from "./key-index.js";
import type { Reservation } from "./reservation.js";
import { SortedList } from "./sorted-list.js";

export interface PoolInit {
  /** Name used in errors (the store's pool id). */
  name?: string;
  /** Round-robin cursor: the offset of the last allocation. */
  lastOffset?: bigint;
}

const NO_OFFSETS: readonly bigint[] = [];

/** `offsets` (ascending) with `offset` inserted in order. */
function insertOffset(offsets: readonly bigint[], offset: bigint): readonly bigint[] {
  const i = offsets.findIndex((o) => o > offset);
  return i < 0 ? [...offsets, offset] : [...offsets.slice(0, i), offset, ...offsets.slice(i)];
}

/**
 * A pool's state: the reservations of one CIDR, in one stable order (by offset) whatever order
 * they were read in. Immutable; every change returns a new Pool sharing structure with the old.
 *
 * Keys: an exact key (`containerId/ifName`) holds at most one address. A *legacy* entry (no
 * ifName: Whereabouts < 0.8) is one attachment of its container whose interface is unknown; a
 * container may hold several (one per interface, or a repeated ADD), all legal. They are indexed
 * per container id, in offset order: the lowest is the one an attachment of that container without
 * an exact entry answers for ({@link forKey}) — see DESIGN.md, "Legacy entries".
 */
export class Pool {
  private constructor(
    readonly cidr: Cidr,
    readonly name: string,
    private readonly byOffset: SortedList<Reservation>,
    private readonly byKey: KeyIndex<bigint>,
    /** containerId → offsets of its legacy entries (ascending, never empty). */
    private readonly legacy: KeyIndex<readonly bigint[]>,
    readonly lastOffset: bigint | undefined,
  ) {}

  static empty(cidr: Cidr, init: PoolInit = {}): Pool {
    return new Pool(cidr, init.name ?? cidr.text, SortedList.empty(), KeyIndex.empty(), KeyIndex.empty(), init.lastOffset);
  }

  /**
   * Builds a pool from reservations in any order. Two reservations at one offset, one exact key at
   * two offsets, or an offset outside the CIDR are reported as corruption — never merged or
   * dropped. Several legacy entries of one container are legal.
   */
  static fromReservations(cidr: Cidr, reservations: Iterable<Reservation>, init: PoolInit = {}): Pool {
    const name = init.name ?? cidr.text;
    const input = Array.isArray(reservations) ? (reservations as readonly Reservation[]) : [...reservations];
    // Stores usually hand over reservations already in offset order: check before sorting.
    let ordered = true;
    for (let i = 1; i < input.length && ordered; i++) ordered = (input[i - 1] as Reservation).offset < (input[i] as Reservation).offset;
    const sorted = ordered ? input : [...input].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    const legacy = new Map<string, bigint[]>();
    const exact: (readonly [string, bigint])[] = [];
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
      if (!isLegacyKey(r.key)) exact.push([formatKey(r.key), r.offset]);
      else {
        const offsets = legacy.get(r.key.containerId);
        if (offsets === undefined) legacy.set(r.key.containerId, [r.offset]);
        else offsets.push(r.offset); // in offset order already
      }
    }
    const byKey = KeyIndex.fromEntries<bigint>(exact, (keyText, first, second) => {
      throw new PoolCorruptError(
        name,
        `key ${keyText} holds two addresses (${formatIp(ipAt(cidr, first))} and ${formatIp(ipAt(cidr, second))})`,
      );
    });
    const byContainer = KeyIndex.fromEntries<readonly bigint[]>(legacy, () => undefined);
    return new Pool(cidr, name, SortedList.fromSorted(sorted), byKey, byContainer, init.lastOffset);
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

  /**
   * The reservation that answers for this attachment: its exact entry; failing that, the lowest
   * legacy entry of its container (the one an ADD adopts and a DEL frees). For a legacy key
   * (empty ifName), the lowest legacy entry of its container.
   */
  forKey(key: AttachmentKey): Reservation | undefined {
    return this.exactly(key) ?? (isLegacyKey(key) ? undefined : this.lowestLegacy(key.containerId));
  }

  /** The exact entry of this key (no legacy fallback); for a legacy key, its container's lowest legacy entry. */
  exactly(key: AttachmentKey): Reservation | undefined {
    if (isLegacyKey(key)) return this.lowestLegacy(key.containerId);
    const offset = this.byKey.get(formatKey(key));
    return offset === undefined ? undefined : this.byOffset.get(offset);
  }

  /** The legacy entries (no ifName) of a container, ordered by offset. */
  legacyOf(containerId: string): Reservation[] {
    return (this.legacy.get(containerId) ?? NO_OFFSETS).map((offset) => this.byOffset.get(offset) as Reservation);
  }

  private lowestLegacy(containerId: string): Reservation | undefined {
    const offset = this.legacy.get(containerId)?.[0];
    return offset === undefined ? undefined : this.byOffset.get(offset);
  }

  /** @internal the offset-ordered list, for the allocator's free-space search. */
  get list(): SortedList<Reservation> {
    return this.byOffset;
  }

  /**
   * A new pool holding `reservation` in addition. Its offset must be free, and an exact key must
   * hold nothing yet (a legacy entry joins its container's others).
   */
  with(reservation: Reservation, options: { moveCursor?: boolean } = {}): Pool {
    const keyText = formatKey(reservation.key);
    const legacy = isLegacyKey(reservation.key);
    if (this.byOffset.get(reservation.offset) !== undefined || (!legacy && this.byKey.has(keyText))) {
      throw new PoolCorruptError(this.name, `refusing to add ${keyText} at offset ${reservation.offset}: taken`);
    }
    const containerId = reservation.key.containerId;
    return new Pool(
      this.cidr,
      this.name,
      this.byOffset.insert(reservation),
      legacy ? this.byKey : this.byKey.set(keyText, reservation.offset),
      legacy ? this.legacy.set(containerId, insertOffset(this.legacy.get(containerId) ?? NO_OFFSETS, reservation.offset)) : this.legacy,
      options.moveCursor === false ? this.lastOffset : reservation.offset,
    );
  }

  /** A new pool with the round-robin cursor at `lastOffset` (same reservations). */
  withCursor(lastOffset: bigint | undefined): Pool {
    return lastOffset === this.lastOffset ? this : new Pool(this.cidr, this.name, this.byOffset, this.byKey, this.legacy, lastOffset);
  }

  /** A new pool without the reservation {@link forKey} answers for this key (the same pool when none). */
  without(key: AttachmentKey): Pool {
    const held = this.forKey(key);
    return held === undefined ? this : this.withoutAt(held.offset);
  }

  /** A new pool without the reservation at this offset, whatever its key (the same pool when none). */
  withoutAt(offset: bigint): Pool {
    const held = this.byOffset.get(offset);
    if (held === undefined) return this;
    let { byKey, legacy } = this;
    if (!isLegacyKey(held.key)) byKey = byKey.delete(formatKey(held.key));
    else {
      const rest = (legacy.get(held.key.containerId) ?? NO_OFFSETS).filter((o) => o !== offset);
      legacy = rest.length === 0 ? legacy.delete(held.key.containerId) : legacy.set(held.key.containerId, rest);
    }
    return new Pool(this.cidr, this.name, this.byOffset.remove(offset), byKey, legacy, this.lastOffset);
  }
}
