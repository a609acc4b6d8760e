import {
  AddressUnavailableError,
  InvalidAddressError,
  InvalidKeyError,
  InvalidRangeError,
  InvalidRequestError,
  PoolCorruptError,
  RangeExhaustedError,
  StoreAccessDeniedError,
  StoreConflictError,
  StoreCorruptError,
  StoreRejectedError,
  StoreUnavailableError,
} from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { CNI_CODES, CniError, errorJson, MAX_ERROR_ANSWER_BYTES, toCniError } from "./errors.js";

const STACK_LINE = /\n\s*at\s|\bat .*:\d+:\d+/;

describe("CniError", () => {
  it("carries code, message and optional details", () => {
    const e = new CniError(7, "bad range", "range 10.0.0.0/33");
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("CniError");
    expect([e.code, e.message, e.details]).toEqual([7, "bad range", "range 10.0.0.0/33"]);
    expect(new CniError(4, "x").details).toBeUndefined();
  });
  it("uses the spec codes and 100+ for plugin codes", () => {
    expect(CNI_CODES).toMatchObject({
      INCOMPATIBLE_VERSION: 1,
      UNSUPPORTED_FIELD: 2,
      INVALID_ENV: 4,
      IO_FAILURE: 5,
      DECODE_FAILURE: 6,
      INVALID_CONFIG: 7,
      TRY_AGAIN_LATER: 11,
      NOT_AVAILABLE: 50,
      RANGE_EXHAUSTED: 100,
      ADDRESS_UNAVAILABLE: 101,
      POOL_CORRUPT: 102,
      ACCESS_DENIED: 103,
      INTERNAL: 999,
    });
  });
});

describe("toCniError", () => {
  it("passes a CniError through unchanged", () => {
    const e = new CniError(2, "unsupported", "key x");
    expect(toCniError(e)).toBe(e);
    expect(toCniError(e, { command: "STATUS" })).toBe(e);
  });
  it("keeps a config error's cniCode and message (duck-typed)", () => {
    class ConfigError extends Error {
      constructor(
        readonly cniCode: number,
        readonly key: string,
        message: string,
      ) {
        super(message);
      }
    }
    const mapped = toCniError(new ConfigError(2, "ipam.datastore", 'unsupported ipam.datastore "redis"'));
    expect(mapped).toBeInstanceOf(CniError);
    expect(mapped.code).toBe(2);
    expect(mapped.message).toBe('unsupported ipam.datastore "redis"');
    expect(toCniError({ cniCode: 7, key: "ipam.range", message: "bad" }).code).toBe(7);
  });

  const cases: [string, Error, number][] = [
    ["STORE_CONFLICT", new StoreConflictError("pool x", { attempts: 10 }), 11],
    ["STORE_UNAVAILABLE", new StoreUnavailableError("etcd unreachable"), 11],
    ["INVALID_RANGE", new InvalidRangeError("range", "10.0.0.0/33", "bad prefix"), 7],
    ["INVALID_ADDRESS", new InvalidAddressError("10.0.0.256", "octet out of range"), 7],
    ["INVALID_KEY", new InvalidKeyError("a/b", "bad"), 7],
    ["INVALID_REQUEST", new InvalidRequestError("static IP outside every range"), 7],
    ["RANGE_EXHAUSTED", new RangeExhaustedError("10.0.0.0/30"), 100],
    ["ADDRESS_UNAVAILABLE", new AddressUnavailableError("10.0.0.5", "held by another attachment"), 101],
    ["POOL_CORRUPT", new PoolCorruptError("10.0.0.0/24", "two reservations at one offset"), 102],
    ["STORE_CORRUPT", new StoreCorruptError("pool x", "not JSON"), 102],
    ["STORE_ACCESS_DENIED", new StoreAccessDeniedError("permission denied"), 103],
    ["STORE_REJECTED", new StoreRejectedError("IPPool 10.0.0.0-8", "request is too large"), 105],
  ];
  it.each(cases)("maps ipamkit %s to its CNI code, keeping the message", (_name, error, code) => {
    const mapped = toCniError(error, { command: "ADD" });
    expect(mapped.code).toBe(code);
    expect(mapped.message).toBe(error.message);
    expect(mapped.details).toBeUndefined();
  });
  it("maps by code when the error is not an instance of this core's classes", () => {
    expect(
      toCniError(Object.assign(new Error("[ipamkit] [core] no free address"), { code: "RANGE_EXHAUSTED", retryable: false })).code,
    ).toBe(100);
  });
  it("maps an exhausted range to 50 on STATUS (and 100 elsewhere)", () => {
    const e = new RangeExhaustedError("10.0.0.0/30");
    expect(toCniError(e, { command: "STATUS" }).code).toBe(50);
    expect(toCniError(e).code).toBe(100);
    for (const command of ["ADD", "DEL", "CHECK", "GC"] as const) expect(toCniError(e, { command }).code).toBe(100);
  });
  it("maps an unreachable store to 50 on STATUS (spec: STATUS fails with 50/51)", () => {
    expect(toCniError(new StoreUnavailableError("etcd unreachable"), { command: "STATUS" }).code).toBe(50);
    expect(toCniError(new StoreConflictError("pool x"), { command: "STATUS" }).code).toBe(11);
  });
  it("puts the cause's message (never its stack) in details", () => {
    const cause = new Error("connect ECONNREFUSED 127.0.0.1:2379");
    const mapped = toCniError(new StoreUnavailableError("etcd unreachable", { cause }));
    expect(mapped.code).toBe(11);
    expect(mapped.details).toBe("connect ECONNREFUSED 127.0.0.1:2379");
    expect(mapped.details).not.toMatch(STACK_LINE);
  });
  it("maps anything else to 999 'internal error: <message>' without a stack", () => {
    const plain = toCniError(new TypeError("cannot read properties of undefined"));
    expect(plain.code).toBe(999);
    expect(plain.message).toBe("internal error: cannot read properties of undefined");
    expect(plain.details).toBeUndefined();
    expect(toCniError("boom").message).toBe("internal error: boom");
    expect(toCniError(undefined).message).toBe("internal error: undefined");
    expect(toCniError(42).message).toBe("internal error: 42");
    expect(toCniError({ reason: "x" }).message).toBe('internal error: {"reason":"x"}');
    expect(toCniError(Object.assign(new Error("enoent"), { code: "ENOENT" })).code).toBe(999);
  });
  it("strips stack frames smuggled into a message", () => {
    const e = new Error("bad thing\n    at foo (/app/x.js:1:2)\n    at bar (/app/y.js:3:4)");
    const mapped = toCniError(e);
    expect(mapped.message).toBe("internal error: bad thing");
    expect(mapped.message).not.toMatch(STACK_LINE);
    const cause = new Error("inner\n    at baz (/app/z.js:5:6)");
    const wrapped = toCniError(new StoreUnavailableError("down", { cause }));
    expect(wrapped.details).toBe("inner");
  });
  it("never includes the stack of the original error", () => {
    const e = new Error("oops");
    const json = errorJson(toCniError(e), "1.1.0");
    expect(json).not.toContain(e.stack?.split("\n")[1]?.trim() ?? "\u0000");
    expect(json).not.toMatch(STACK_LINE);
  });
});

describe("errorJson", () => {
  it("writes {cniVersion, code, msg, details} and a newline", () => {
    const text = errorJson(new CniError(11, "try again", "conflict on pool x"), "1.0.0");
    expect(text.endsWith("\n")).toBe(true);
    expect(text.split("\n")).toHaveLength(2);
    expect(JSON.parse(text)).toEqual({ cniVersion: "1.0.0", code: 11, msg: "try again", details: "conflict on pool x" });
    expect(Object.keys(JSON.parse(text))).toEqual(["cniVersion", "code", "msg", "details"]);
  });
  it("omits empty or missing details", () => {
    expect(JSON.parse(errorJson(new CniError(7, "bad"), "0.4.0"))).toEqual({ cniVersion: "0.4.0", code: 7, msg: "bad" });
    expect("details" in JSON.parse(errorJson(new CniError(7, "bad", ""), "0.4.0"))).toBe(false);
  });
});

// Found by the hostile-input test (issue 39): a 64 KiB network_name that passes the config schema was
// quoted whole by the file store ("network name … is too long to be stored as a file name"), and the
// answer was 65 KB. errorJson, which builds every error answer, now cuts quoted values and bounds it.
describe("errorJson bounds every answer to 4 KiB", () => {
  const bytes = (text: string) => Buffer.byteLength(text, "utf8");
  const name = "a".repeat(65_536);

  it("a 64 KiB quoted network name: cut to 120 characters, the reason after it kept, answer ≤ 4 KiB", () => {
    const error = new InvalidRequestError(`network name ${JSON.stringify(name)} is too long to be stored as a file name`);
    const out = errorJson(toCniError(error), "1.0.0");
    expect(bytes(out)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    const body = JSON.parse(out) as { code: number; msg: string };
    expect(body.code).toBe(7);
    expect(body.msg).toContain(`network name "${"a".repeat(120)}…" is too long to be stored as a file name`);
  });

  it("several quoted values, escapes inside them and short ones untouched", () => {
    const long = `x\\"${"y".repeat(300)}`;
    const out = errorJson(new CniError(7, `a "short" then ${JSON.stringify(long)} then "${"\\u0000".repeat(40)}" end`), "1.0.0");
    const msg = (JSON.parse(out) as { msg: string }).msg;
    expect(msg).toBe(`a "short" then "x\\\\\\"${"y".repeat(115)}…" then "${"\\u0000".repeat(20)}…" end`);
  });

  it("unquoted, multi-byte and escaped text in msg and details: cut (…) to fit, still valid JSON", () => {
    for (const filler of ["z", "é", "😀", "\u0000", "\n"]) {
      const text = filler.repeat(70_000);
      const out = errorJson(new CniError(11, `msg ${text}`, `details ${text}`), "1.0.0");
      expect(bytes(out)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
      const body = JSON.parse(out) as { msg: string; details: string };
      expect(body.msg.startsWith("msg ")).toBe(true);
      expect(body.msg.endsWith("…")).toBe(true);
      expect(body.details.startsWith("details ")).toBe(true);
      expect(bytes(JSON.stringify(body.details))).toBeGreaterThan(1000); // the room msg left
    }
  });

  it("a 64 MiB message is bounded quickly", () => {
    const started = Date.now();
    const out = errorJson(new CniError(7, `key "${"q".repeat(64 * 1024 * 1024)}" bad`), "1.0.0");
    expect(bytes(out)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
