import { describe, expect, it } from "vitest";
import { CniError } from "./errors.js";
import { SUPPORTED_VERSIONS } from "./types.js";
import { commandAllowed, compareVersions, isSupported, minimumVersionFor, versionResult } from "./versions.js";

describe("compareVersions", () => {
  it("compares x.y.z numerically, not as text", () => {
    expect(compareVersions("0.3.0", "0.3.1")).toBe(-1);
    expect(compareVersions("0.4.0", "0.3.1")).toBe(1);
    expect(compareVersions("1.1.0", "1.1.0")).toBe(0);
    expect(compareVersions("0.10.0", "0.9.0")).toBe(1);
    expect(compareVersions("1.0.0", "0.99.99")).toBe(1);
  });
  it("treats missing parts as 0", () => {
    expect(compareVersions("1.0", "1.0.0")).toBe(0);
    expect(compareVersions("1", "0.4.0")).toBe(1);
  });
  it("sorts SUPPORTED_VERSIONS into the order they are declared", () => {
    const shuffled = [...SUPPORTED_VERSIONS].reverse();
    expect(shuffled.sort(compareVersions)).toEqual([...SUPPORTED_VERSIONS]);
  });
  it("rejects a non-numeric version with code 1 naming it", () => {
    for (const bad of ["", "v1.0.0", "1.0.0-rc1", "1.0.0.0", "a.b.c", "1..0"]) {
      let caught: unknown;
      try {
        compareVersions(bad, "1.0.0");
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(CniError);
      expect((caught as CniError).code).toBe(1);
      expect((caught as CniError).message).toContain(JSON.stringify(bad));
    }
  });
});

describe("isSupported", () => {
  it("accepts exactly 0.1.0 … 1.1.0 (as Whereabouts)", () => {
    for (const v of ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) expect(isSupported(v)).toBe(true);
    for (const v of ["0.0.9", "1.2.0", "1.0", "", "1.1.0 "]) expect(isSupported(v)).toBe(false);
  });
});

describe("versionResult", () => {
  it("echoes the input version and advertises SUPPORTED_VERSIONS, 0.1.0 to 1.1.0", () => {
    expect(versionResult("0.4.0")).toEqual({
      cniVersion: "0.4.0",
      supportedVersions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"],
    });
    expect(versionResult("0.2.0").cniVersion).toBe("0.2.0");
  });
  it("returns a fresh array each time", () => {
    const a = versionResult("1.1.0");
    a.supportedVersions.push("9.9.9");
    expect(versionResult("1.1.0").supportedVersions).toEqual([...SUPPORTED_VERSIONS]);
  });
});

describe("commandAllowed", () => {
  it("allows ADD, DEL and VERSION at every supported version", () => {
    for (const v of SUPPORTED_VERSIONS) {
      expect(commandAllowed("ADD", v)).toBe(true);
      expect(commandAllowed("DEL", v)).toBe(true);
      expect(commandAllowed("VERSION", v)).toBe(true);
    }
  });
  it("needs 0.4.0 for CHECK", () => {
    expect(commandAllowed("CHECK", "0.3.0")).toBe(false);
    expect(commandAllowed("CHECK", "0.3.1")).toBe(false);
    expect(commandAllowed("CHECK", "0.4.0")).toBe(true);
    expect(commandAllowed("CHECK", "1.0.0")).toBe(true);
    expect(commandAllowed("CHECK", "1.1.0")).toBe(true);
  });
  it("needs 1.1.0 for GC and STATUS", () => {
    for (const command of ["GC", "STATUS"] as const) {
      for (const v of ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"] as const) expect(commandAllowed(command, v)).toBe(false);
      expect(commandAllowed(command, "1.1.0")).toBe(true);
      expect(minimumVersionFor(command)).toBe("1.1.0");
    }
    expect(minimumVersionFor("CHECK")).toBe("0.4.0");
    expect(minimumVersionFor("ADD")).toBe("0.1.0");
  });
});
