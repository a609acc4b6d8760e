import { describe, expect, it } from "vitest";
import { planNodeSlices, type SliceAllocation, slicesOf } from "./node-slices.js";

const free = (sliceRange: string): SliceAllocation => ({ nodeName: "", sliceRange });

describe("node slices: the plan", () => {
  it("divides a range into its slices, in address order, all free (as Whereabouts' DivideRangeBySize)", () => {
    expect(slicesOf("10.0.0.0/22", "/24")).toEqual(["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"].map(free));
    expect(slicesOf("10.0.0.0/24", "24")).toEqual([free("10.0.0.0/24")]);
    expect(() => slicesOf("10.0.0.0/24", "/20")).toThrow(/from \/24 to \/32/);
    expect(slicesOf("fd00::/112", "/120").slice(0, 2)).toEqual([free("fd00::/120"), free("fd00::100/120")]);
    expect(() => slicesOf("fd00::/64", "/120")).toThrow(/72057594037927936 slices, more than 32768/);
  });

  it("gives each node without a slice the first free one, in node-name order; a full pool leaves the rest waiting", () => {
    const plan = planNodeSlices({ range: "10.0.0.0/23", sliceSize: "/24", allocations: [], nodes: ["b", "a", "c"], busy: () => false });
    expect(plan.allocations).toEqual([
      { nodeName: "a", sliceRange: "10.0.0.0/24" },
      { nodeName: "b", sliceRange: "10.0.1.0/24" },
    ]);
    expect(plan.waiting).toEqual(["c"]);
  });

  it("frees a deleted node's slice only when its IPPool is empty, and never moves a live node's slice", () => {
    const allocations = [
      { nodeName: "kept", sliceRange: "10.0.0.0/24" },
      { nodeName: "gone-busy", sliceRange: "10.0.1.0/24" },
      { nodeName: "gone-idle", sliceRange: "10.0.2.0/24" },
      free("10.0.3.0/24"),
    ];
    const plan = planNodeSlices({
      range: "10.0.0.0/22",
      sliceSize: "/24",
      allocations,
      nodes: ["kept", "new"],
      busy: (a) => a.nodeName === "gone-busy",
    });
    expect(plan.freed).toEqual([{ node: "gone-idle", slice: "10.0.2.0/24" }]);
    expect(plan.assigned).toEqual([{ node: "new", slice: "10.0.2.0/24" }]);
    expect(plan.allocations.map((a) => a.nodeName)).toEqual(["kept", "gone-busy", "new", ""]);
    // the input is not changed
    expect(allocations[2]?.nodeName).toBe("gone-idle");
  });
});
