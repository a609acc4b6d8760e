import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyIndex } from "./key-index.js";

describe("KeyIndex (persistent)", () => {
  it("behaves like an immutable map for every version, read in any order", () => {
    const op = fc.oneof(
      fc.record({ set: fc.constant(true as const), key: fc.nat(12), value: fc.nat(1000) }),
      fc.record({ set: fc.constant(false as const), key: fc.nat(12) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 40 }), (ops, reads) => {
        const versions: KeyIndex<number>[] = [KeyIndex.empty()];
        const models: Map<string, number>[] = [new Map()];
        for (const o of ops) {
          const base = versions[versions.length - 1] as KeyIndex<number>;
          const model = new Map(models[models.length - 1]);
          if (o.set) {
            versions.push(base.set(`k${o.key}`, o.value));
            model.set(`k${o.key}`, o.value);
          } else {
            versions.push(base.delete(`k${o.key}`));
            model.delete(`k${o.key}`);
          }
          models.push(model);
        }
        // read old and new versions in random order: each must still be exactly its model
        for (const r of reads) {
          const i = r % versions.length;
          const v = versions[i] as KeyIndex<number>;
          const m = models[i] as Map<string, number>;
          expect(v.size).toBe(m.size);
          for (let k = 0; k <= 12; k++) expect(v.get(`k${k}`)).toBe(m.get(`k${k}`));
        }
        // and branching from an old version leaves the newer ones intact
        const old = versions[0] as KeyIndex<number>;
        const branch = old.set("branch", 1);
        expect(branch.get("branch")).toBe(1);
        expect((versions[versions.length - 1] as KeyIndex<number>).get("branch")).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("reports duplicates when built in bulk, keeping the first value", () => {
    const dups: string[] = [];
    const idx = KeyIndex.fromEntries(
      [
        ["a", 1],
        ["b", 2],
        ["a", 3],
      ],
      (key, first, second) => dups.push(`${key}:${first}:${second}`),
    );
    expect(dups).toEqual(["a:1:3"]);
    expect(idx.get("a")).toBe(1);
    expect(idx.size).toBe(2);
  });

  it("reroots a long chain without recursion", () => {
    let v = KeyIndex.empty<number>();
    const first = v;
    for (let i = 0; i < 200_000; i++) v = v.set(`k${i % 1000}`, i);
    expect(first.get("k5")).toBeUndefined();
    expect(first.size).toBe(0);
    expect(v.get("k5")).toBe(199_005);
  });
});
