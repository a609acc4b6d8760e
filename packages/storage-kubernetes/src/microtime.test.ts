import { describe, expect, it } from "vitest";
import { formatMicroTime, parseMicroTime } from "./microtime.js";

describe("formatMicroTime", () => {
  it("writes UTC with exactly 6 fractional digits", () => {
    expect(formatMicroTime(new Date(Date.UTC(2026, 11, 2, 10, 0, 0, 123)))).toBe("2026-12-02T10:00:00.123000Z");
    expect(formatMicroTime(new Date(0))).toBe("1970-01-01T00:00:00.000000Z");
    expect(formatMicroTime(new Date())).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  it("round-trips through parseMicroTime", () => {
    for (const ms of [0, 1, 999, 1_764_669_600_123, Date.UTC(2000, 1, 29, 23, 59, 59, 999)]) {
      const text = formatMicroTime(new Date(ms));
      expect(parseMicroTime(text)?.getTime()).toBe(ms);
      expect(formatMicroTime(parseMicroTime(text) ?? new Date(Number.NaN))).toBe(text);
    }
  });

  it("refuses an invalid Date", () => {
    expect(() => formatMicroTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe("parseMicroTime", () => {
  const at = Date.UTC(2026, 11, 2, 10, 0, 0);
  it.each([
    ["2026-12-02T10:00:00Z", at],
    ["2026-12-02T10:00:00.123Z", at + 123],
    ["2026-12-02T10:00:00.123456Z", at + 123],
    ["2026-12-02T10:00:00.123456789Z", at + 123],
    ["2026-12-02T10:00:00.5Z", at + 500],
    ["2026-12-02T12:30:00.000000+02:30", at],
    ["2026-12-02T07:00:00-03:00", at],
    ["0099-01-01T00:00:00Z", Date.parse("0099-01-01T00:00:00.000Z")], // not read as 1999
  ])("reads %s", (text, expected) => {
    expect(parseMicroTime(text)?.getTime()).toBe(expected);
  });

  it.each([
    "",
    "garbage",
    "2026-12-02",
    "2026-12-02 10:00:00Z",
    "2026-12-02T10:00:00",
    "2026-12-02T10:00:00.Z",
    "2026-12-02T10:00:00.123",
    "2026-13-02T10:00:00Z",
    "2026-02-30T10:00:00Z",
    "2026-12-02T24:00:00Z",
    "2026-12-02T10:60:00Z",
    "2026-12-02T10:00:60Z",
    "2026-12-02T10:00:00+25:00",
    " 2026-12-02T10:00:00Z",
  ])("refuses %j", (text) => {
    expect(parseMicroTime(text)).toBeUndefined();
  });
});
