import { describe, expect, it } from "vitest";
import { createIpam, type Exclusive } from "./ipam.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { parseRange } from "./range.js";

const range = parseRange({ range: "10.7.0.0/29" });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });

describe("createIpam's exclusive hook", () => {
  it("runs every allocate inside it, one at a time, and no release", async () => {
    const store = createMemoryStore();
    let held = false;
    let runs = 0;
    let queue = Promise.resolve();
    const writesOutside: string[] = [];
    const exclusive: Exclusive = (fn) => {
      const run = queue.then(async () => {
        held = true;
        runs++;
        try {
          return await fn();
        } finally {
          held = false;
        }
      });
      queue = run.then(
        () => undefined,
        () => undefined,
      );
      return run;
    };
    const writesInside: string[] = [];
    const guarded = { ...store };
    for (const method of ["writePool", "writeClaim", "commit"] as const) {
      const original = store[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
      if (original === undefined) continue;
      (guarded as Record<string, unknown>)[method] = (...args: unknown[]) => {
        (held ? writesInside : writesOutside).push(method);
        return original.apply(store, args);
      };
    }
    const ipam = createIpam({ store: guarded, exclusive });
    const got = await Promise.all(["a", "b", "c"].map((id) => ipam.allocate({ ranges: [range], key: key(id) })));
    expect(new Set(got.map(([a]) => a?.reservation.offset)).size).toBe(3);
    expect(runs).toBe(3);
    expect(writesOutside).toEqual([]);
    expect(writesInside.length).toBeGreaterThanOrEqual(3);
    await ipam.release({ ranges: [range], key: key("a") });
    expect(runs).toBe(3);
    expect(writesOutside.length).toBeGreaterThan(0);
  });

  it("passes its error on: nothing is allocated when it cannot be held", async () => {
    const store = createMemoryStore();
    const refuse: Exclusive = async () => {
      throw new Error("lock unavailable");
    };
    await expect(createIpam({ store, exclusive: refuse }).allocate({ ranges: [range], key: key("a") })).rejects.toThrow("lock unavailable");
    expect(await store.readPool({ network: "", cidr: range.cidr.text })).toBeUndefined();
  });
});
