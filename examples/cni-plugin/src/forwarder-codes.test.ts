import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ABOUT_TEXT, CNI_CODES, DEFAULT_ERROR_VERSION, ERROR_MSG_BYTES } from "@ipamkit/cni";
import { describe, expect, it } from "vitest";
import { FORWARDER_ERRORS, FORWARDER_TEXTS, forwarderCodesHeader } from "./forwarder-errors.js";

// The native forwarder's codes and fixed messages are generated from the TypeScript tables
// (build.mjs writes src/forwarder-codes.h): the C code holds none of its own.

const src = import.meta.dirname;
const HEADER = join(src, "forwarder-codes.h");

function header(): string {
  try {
    return readFileSync(HEADER, "utf8");
  } catch {
    throw new Error(`${HEADER} is missing: build the plugin first (cd examples/cni-plugin && node build.mjs)`);
  }
}

/** The header's #defines, read as C would read them (independently of forwarderCodesHeader). */
function defines(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [, name, value] of text.matchAll(/^#define (\w+) (.+)$/gm)) out.set(name as string, value as string);
  return out;
}

describe("src/forwarder-codes.h", () => {
  it("is what the tables give now (a stale build fails here: run `node build.mjs`)", () => {
    expect(header()).toBe(forwarderCodesHeader());
  });

  it("holds every CNI code of @ipamkit/cni, and each forwarder error with its code and message", () => {
    const found = defines(header());
    for (const [name, code] of Object.entries(CNI_CODES)) expect(found.get(`IPAMKIT_CODE_${name}`), name).toBe(String(code));
    expect(found.get("IPAMKIT_ERROR_MSG_BYTES")).toBe(String(ERROR_MSG_BYTES));
    expect(JSON.parse(found.get("IPAMKIT_ERROR_VERSION") ?? "null")).toBe(DEFAULT_ERROR_VERSION);
    // C and JSON string literals agree for these texts (ASCII, escapes \" \\ \n only)
    for (const [name, text] of Object.entries(FORWARDER_TEXTS))
      expect(JSON.parse(found.get(`IPAMKIT_T_${name}`) ?? "null"), name).toBe(text);
    expect(FORWARDER_TEXTS.ABOUT).toBe(ABOUT_TEXT);
    for (const [name, { code, format }] of Object.entries(FORWARDER_ERRORS)) {
      const value = found.get(`IPAMKIT_E_${name}`) ?? "";
      const [, codeName, literal] = /^(IPAMKIT_CODE_\w+), (".*")$/.exec(value) ?? [];
      expect(found.get(codeName ?? ""), name).toBe(String(code));
      expect(JSON.parse(literal ?? "null"), name).toBe(format);
    }
  });

  it("is the only source of codes and messages in the C files: no number or text is passed to cni_fail by hand", () => {
    // and no fixed text of the table is written out in C
    for (const file of readdirSync(src).filter((f) => /^forwarder.*\.[ch]$/.test(f) && f !== "forwarder-codes.h")) {
      const text = readFileSync(join(src, file), "utf8");
      for (const fixed of [...Object.values(FORWARDER_TEXTS), ...Object.values(FORWARDER_ERRORS).map((e) => e.format)]) {
        const start = (fixed.split("%")[0] ?? "").slice(0, 24);
        if (start.length >= 8) expect(text.includes(start), `${file} spells out ${JSON.stringify(fixed)}`).toBe(false);
      }
    }
    const files = readdirSync(src).filter((f) => /^forwarder.*\.[ch]$/.test(f) && f !== "forwarder-codes.h");
    expect(files).toContain("forwarder.c");
    const calls: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(src, file), "utf8");
      for (const [call] of text.matchAll(/cni_fail\([^,]+,[^,)]+/g)) calls.push(`${file}: ${call}`);
      // the old helper, which took a code number and a text
      expect(text, file).not.toMatch(/cni_error\(/);
    }
    expect(calls.length).toBeGreaterThan(10);
    const handWritten = calls.filter((call) => !/cni_fail\([^,]+, IPAMKIT_E_\w+$/.test(call));
    // only the helper's own definition takes a plain code and format
    expect(handWritten).toEqual(["forwarder.c: cni_fail(const struct buf *in, int code"]);
  });
});
