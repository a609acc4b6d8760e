import { describe, expect, it } from "vitest";
import { InvalidKeyError } from "./errors.js";
import { attachmentKey, formatKey, parseKey, sameKey } from "./key.js";

describe("attachment keys", () => {
  it("formats and parses (containerId, ifName) as one text form", () => {
    const key = attachmentKey({ containerId: "abc123", ifName: "net1" });
    expect(formatKey(key)).toBe("abc123/net1");
    expect(parseKey("abc123/net1")).toEqual(key);
  });
  it("rejects empty or malformed parts with a typed error", () => {
    for (const bad of [
      { containerId: "", ifName: "eth0" },
      { containerId: "a/b", ifName: "eth0" },
      { containerId: "abc", ifName: "" },
      { containerId: "abc", ifName: "way-too-long-ifname" },
      { containerId: "abc", ifName: "a/b" },
    ]) {
      expect(() => attachmentKey(bad)).toThrow(InvalidKeyError);
    }
    expect(() => parseKey("no-slash")).toThrow(InvalidKeyError);
    expect(() => parseKey("a/b/c")).toThrow(InvalidKeyError);
  });
  it("keeps legacy entries without ifname as an exact key, never a wildcard", () => {
    const legacy = attachmentKey({ containerId: "abc", ifName: "" }, { allowLegacy: true });
    expect(sameKey(legacy, attachmentKey({ containerId: "abc", ifName: "eth0" }))).toBe(false);
    expect(parseKey("abc/")).toEqual(legacy);
  });
});
