import { describe, expect, it } from "vitest";
import { clone, type Json } from "./json.js";

describe("clone", () => {
  it("copies a JSON value deeply: equal, sharing no object or array, a __proto__ key kept as data", () => {
    const parsed = JSON.parse('{"a":[1,{"b":null,"c":"x"}],"__proto__":{"polluted":true},"n":0.5,"t":true}') as Json;
    const copy = clone(parsed);
    expect(copy).toEqual(parsed);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(parsed));
    const source = parsed as { a: [number, { c: string }] };
    const copied = copy as { a: [number, { c: string }] };
    expect(copied.a).not.toBe(source.a);
    expect(copied.a[1]).not.toBe(source.a[1]);
    copied.a[1].c = "changed";
    expect(source.a[1].c).toBe("x");
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.hasOwn(copy as object, "__proto__")).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    for (const primitive of [null, 1, "s", false] as const) expect(clone(primitive)).toBe(primitive);
  });
});
