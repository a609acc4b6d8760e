import { describe, expect, it } from "vitest";
import { InvalidRangeError } from "./errors.js";
import { affinityClaimRef, blockLayout, blockRange, nodeBlockOrder } from "./node-blocks.js";
import { parseRange } from "./range.js";

describe("block layout", () => {
  const range = parseRange({ range: "10.0.0.0/24" });

  it("cuts a range into aligned blocks of a power-of-two size", () => {
    const layout = blockLayout(range, 16);
    expect(layout.count).toBe(16n);
    expect(layout.prefix).toBe(28);
    expect(blockRange(layout, 3n)?.cidr.text).toBe("10.0.0.48/28");
    expect(blockRange(layout, 16n)).toBeUndefined();
  });

  it.each([3, 12, 0, 256, 512])("refuses a block size of %s, naming node_block_size", (size) => {
    expect(() => blockLayout(range, size)).toThrow(InvalidRangeError);
    expect(() => blockLayout(range, size)).toThrow(/node_block_size/);
  });

  it("clips the parent's usable span, excludes and gateway into each block", () => {
    const parent = parseRange({
      range: "10.0.0.0/24",
      range_start: "10.0.0.10",
      range_end: "10.0.0.200",
      exclude: ["10.0.0.64/30"],
      gateway: "10.0.0.11",
    });
    const layout = blockLayout(parent, 16);
    const first = blockRange(layout, 0n);
    expect([first?.first, first?.last, first?.capacity]).toEqual([10n, 15n, 5n]); // .10-.15 minus the gateway .11
    expect(first?.blocked).toEqual([{ from: 11n, to: 11n }]);
    const excluded = blockRange(layout, 4n);
    expect(excluded?.blocked).toEqual([{ from: 0n, to: 3n }]);
    expect(excluded?.capacity).toBe(12n);
    expect(blockRange(layout, 12n)?.last).toBe(8n); // .192-.200
    expect(blockRange(layout, 13n)).toBeUndefined(); // beyond range_end
    expect(first?.gateway?.value).toBe(parent.gateway?.value);
  });

  it("takes the parent's network and last address out of the first and last block", () => {
    const layout = blockLayout(range, 16);
    expect(blockRange(layout, 0n)?.first).toBe(1n);
    expect(blockRange(layout, 15n)?.last).toBe(14n);
    expect(blockRange(layout, 7n)?.capacity).toBe(16n);
  });

  it("gives every node an order that visits each block exactly once, the same every time", () => {
    for (const size of [16, 4]) {
      const layout = blockLayout(parseRange({ range: "10.1.0.0/20" }), size);
      for (const node of ["node-1", "node-2", "worker.example"]) {
        const order = [...nodeBlockOrder(layout, node)];
        expect(new Set(order).size).toBe(Number(layout.count));
        expect(order).toEqual([...nodeBlockOrder(layout, node)]);
      }
    }
    const layout = blockLayout(parseRange({ range: "10.1.0.0/20" }), 16);
    const firsts = new Set(Array.from({ length: 50 }, (_, i) => nodeBlockOrder(layout, `node-${i}`).next().value));
    expect(firsts.size).toBeGreaterThan(30); // names spread over the blocks
  });

  it("works on IPv6 ranges far wider than 64 bits without enumerating them", () => {
    const layout = blockLayout(parseRange({ range: "2001:db8::/48" }), 256);
    expect(layout.count).toBe(1n << 72n);
    const [a, b] = nodeBlockOrder(layout, "n1");
    expect(a).not.toBe(b);
    expect(blockRange(layout, a as bigint)?.cidr.prefix).toBe(120);
  });

  it("keeps affinity claims in a network of their own", () => {
    const block = blockRange(blockLayout(range, 16), 2n);
    if (block === undefined) throw new Error("no block");
    expect(affinityClaimRef("", block)).toEqual({ network: "node-blocks", address: "10.0.0.32" });
    expect(affinityClaimRef("tenant-a", block)).toEqual({ network: "tenant-a-node-blocks", address: "10.0.0.32" });
  });
});
