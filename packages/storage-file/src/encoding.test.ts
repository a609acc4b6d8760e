import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeName, encodeName, isWellFormed } from "./encoding.js";

const SAFE = /^(?:[a-z0-9.-]|_[0-9A-F]{2})+$|^_$/;

describe("file name encoding", () => {
  it("examples", () => {
    expect(encodeName("")).toBe("_");
    expect(encodeName("10.0.0.0/16")).toBe("10.0.0.0_2F16");
    expect(encodeName("2001:db8::/64")).toBe("2001_3Adb8_3A_3A_2F64");
    expect(encodeName("_")).toBe("_5F");
    expect(encodeName(".")).toBe("_2E");
    expect(encodeName("..")).toBe("_2E.");
    expect(encodeName("Blue")).toBe("_42lue");
    expect(encodeName("é")).toBe("_C3_A9");
    expect(decodeName("_41")).toBe("A");
  });

  it("round-trips any well-formed text into a safe, distinct, non-hidden name", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (text) => {
        fc.pre(isWellFormed(text));
        const name = encodeName(text);
        expect(name).toMatch(SAFE);
        expect(name.startsWith(".")).toBe(false);
        expect(decodeName(name)).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it("decodes only canonical names", () => {
    for (const stray of ["", "A", "_2e", "_2", "__", "_5f", ".hidden", "a_", "_FF", "lost+found", "_C3", "a b"]) {
      expect(decodeName(stray)).toBeUndefined();
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (name) => {
        const text = decodeName(name);
        if (text !== undefined) expect(encodeName(text)).toBe(name);
      }),
      { numRuns: 2000 },
    );
  });

  it("tells lone surrogates apart", () => {
    expect(isWellFormed("a\uD83D\uDE00b")).toBe(true);
    expect(isWellFormed("a\uD83Db")).toBe(false);
    expect(isWellFormed("\uDE00")).toBe(false);
  });
});
