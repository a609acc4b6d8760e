import { createIpam, formatIp, parseRange } from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

const range = parseRange({ range: "10.50.0.0/20" });

export function registerConcurrencyCases(ctx: SuiteContext): void {
  const { allocators, each } = ctx.options.concurrency ?? { allocators: 32, each: 20 };

  it(`${allocators} concurrent allocators × ${each} allocations on one pool: all distinct, none lost`, async () => {
    const s = ctx.store();
    const counter = { conflicts: 0 };
    const workers = Array.from({ length: allocators }, async (_, w) => {
      const ipam = createIpam({ store: s, retry: { counter, attempts: 1000, deadlineMs: 120_000, baseDelayMs: 1, maxDelayMs: 50 } });
      const got: string[] = [];
      for (let n = 0; n < each; n++) {
        const [a] = await ipam.allocate({ ranges: [range], key: key(`w${w}-n${n}`) });
        if (a !== undefined) got.push(formatIp(a.address));
      }
      return got;
    });
    const all = (await Promise.all(workers)).flat();
    expect(all).toHaveLength(allocators * each);
    expect(new Set(all).size).toBe(allocators * each);
    const pool = (await s.readPool({ network: "", cidr: range.cidr.text }))?.pool;
    expect(pool?.size).toBe(allocators * each);
    for (let w = 0; w < allocators; w++) {
      for (let n = 0; n < each; n++) expect(pool?.forKey(key(`w${w}-n${n}`))).toBeDefined();
    }
    console.info(
      `[conformance] ${s.name}: ${allocators * each} allocations by ${allocators} allocators, ${counter.conflicts} conflicts retried`,
    );
    // deliberately contended: on an HTTP store 32 writers retry thousands of conflicts (~30 s on
    // 2 cores for the test API server), so the limit is the retry deadline's, not the default 30 s
  }, 180_000);
}
