import { describe, expect, it } from "vitest";
import { ApiError } from "./errors.js";
import { parseMicroTime } from "./microtime.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "./selectors.js";

const labels = (selector: string, set: Record<string, string>) => matchesLabels(parseLabelSelector(selector), set);

describe("label selectors", () => {
  it("parse set-based requirements with spaces, and compare integers with gt/lt", () => {
    expect(parseLabelSelector(" a in ( x , y ),!b ,c!=d")).toEqual([
      { key: "a", operator: "in", values: ["x", "y"] },
      { key: "b", operator: "!exists", values: [] },
      { key: "c", operator: "!=", values: ["d"] },
    ]);
    expect(labels("n>5", { n: "6" })).toBe(true);
    expect(labels("n<5", { n: "6" })).toBe(false);
    expect(labels("n>5", {})).toBe(false);
    expect(labels("example.com/role=db", { "example.com/role": "db" })).toBe(true);
    expect(labels("a=", { a: "" })).toBe(true);
  });

  it("match != and notin when the label is absent", () => {
    expect(labels("a!=x", {})).toBe(true);
    expect(labels("a notin (x)", {})).toBe(true);
    expect(labels("a in (x)", {})).toBe(false);
  });

  it("refuse malformed input with a 400", () => {
    for (const bad of ["a in", "a ! b", "n>x", "a=(b)", "=a", `a=${"v".repeat(64)}`]) {
      let error: unknown;
      try {
        parseLabelSelector(bad);
      } catch (e) {
        error = e;
      }
      expect(error, bad).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe(400);
    }
  });
});

describe("field selectors", () => {
  const fields = ["metadata.name", "spec.nodeName"];
  it("unescape values and keep the first operator", () => {
    expect(parseFieldSelector("metadata.name=a\\,b,spec.nodeName!=n\\=1", fields)).toEqual([
      { field: "metadata.name", operator: "=", value: "a,b" },
      { field: "spec.nodeName", operator: "!=", value: "n=1" },
    ]);
    const selector = parseFieldSelector("metadata.name==x", fields);
    expect(matchesFields(selector, () => "x")).toBe(true);
    expect(matchesFields(selector, () => "y")).toBe(false);
  });

  it("refuse unknown fields, bad escapes and terms without an operator", () => {
    expect(() => parseFieldSelector("status.phase=Running", fields)).toThrow("field label not supported: status.phase");
    expect(() => parseFieldSelector("metadata.name=a\\b", fields)).toThrow(ApiError);
    expect(() => parseFieldSelector("metadata.name", fields)).toThrow(ApiError);
  });
});

describe("MicroTime", () => {
  it("parses exactly 6 fractional digits and normalises to UTC", () => {
    expect(parseMicroTime("2026-12-02T10:00:00.123456Z")).toBe("2026-12-02T10:00:00.123456Z");
    expect(parseMicroTime("2026-12-31T23:30:00.000001-01:00")).toBe("2027-01-01T00:30:00.000001Z");
    expect(parseMicroTime("2026-12-02T10:00:00.123Z")).toEqual({
      error: 'parsing time "2026-12-02T10:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
    });
    expect(parseMicroTime("2026-02-30T10:00:00.000000Z")).toHaveProperty("error");
  });
});
