import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SortedList } from "./sorted-list.js";

const item = (offset: bigint) => ({ offset });

describe("SortedList", () => {
  it("finds the end of every consecutive run, across chunk boundaries, like a plain scan", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(3000), { minLength: 1, maxLength: 2500 }), fc.array(fc.nat(), { maxLength: 30 }), (raw, probes) => {
        const offsets = [...raw].sort((a, b) => a - b);
        let list = SortedList.fromSorted(offsets.slice(0, offsets.length >> 1).map((o) => item(BigInt(o))));
        for (const o of offsets.slice(offsets.length >> 1)) list = list.insert(item(BigInt(o))); // grows and splits chunks
        expect(list.toArray().map((x) => Number(x.offset))).toEqual(offsets);
        for (const p of probes) {
          const i = p % offsets.length;
          let j = i;
          while (j + 1 < offsets.length && (offsets[j + 1] as number) === (offsets[j] as number) + 1) j++;
          expect(list.runEnd(i)).toBe(j);
          expect(list.indexAtOrAfter(BigInt(offsets[i] as number))).toBe(i);
          expect(list.at(i)?.offset).toBe(BigInt(offsets[i] as number));
        }
      }),
      { numRuns: 120 },
    );
  });

  it("removes items and keeps the old version intact", () => {
    const a = SortedList.fromSorted([1n, 2n, 3n].map(item));
    const b = a.remove(2n);
    expect(b.toArray().map((x) => x.offset)).toEqual([1n, 3n]);
    expect(a.toArray().map((x) => x.offset)).toEqual([1n, 2n, 3n]);
    expect(b.remove(9n)).toBe(b);
  });
});
