import { parseCidr } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { resolveOwner, type SliceOwners, sliceOwnersOf } from "./pool-owners.js";

const owners: SliceOwners[] = sliceOwnersOf([
  {
    metadata: { name: "wbnet" },
    spec: { range: "10.9.0.0/22", sliceSize: "/24" },
    status: {
      allocations: [
        { nodeName: "node-a", sliceRange: "10.9.1.0/24" },
        { nodeName: "", sliceRange: "10.9.2.0/24" },
      ],
    },
  },
  // an unnamed network's pool is named after its CNI network name; its slice pools are `<node>-<slice>`
  {
    metadata: { name: "interop" },
    spec: { range: "10.8.0.0/22", sliceSize: "24" },
    status: { allocations: [{ nodeName: "node-b", sliceRange: "10.8.3.0/24" }] },
  },
  { metadata: { name: "broken" }, spec: { range: 5 } },
]);

describe("whose pool an IPPool Whereabouts wrote is", () => {
  it("reads the NodeSlicePools, skipping malformed ones", () => {
    expect(owners.map((o) => [o.name, o.range.text, [...o.nodeOf]])).toEqual([
      ["wbnet", "10.9.0.0/22", [["10.9.1.0/24", "node-a"]]],
      ["interop", "10.8.0.0/22", [["10.8.3.0/24", "node-b"]]],
    ]);
  });

  it("a slice pool of its current node: named network `W-N-<slice>`, unnamed `N-<slice>`", () => {
    expect(resolveOwner("wbnet-node-a", parseCidr("10.9.1.0/24"), owners)).toEqual({
      network: "wbnet",
      cidr: "10.9.1.0/24",
      node: "node-a",
    });
    expect(resolveOwner("node-b", parseCidr("10.8.3.0/24"), owners)).toEqual({ network: "", cidr: "10.8.3.0/24", node: "node-b" });
  });

  it("a slice pool of a former node of the network's range (the slice freed or moved since)", () => {
    expect(resolveOwner("wbnet-gone-1", parseCidr("10.9.2.0/24"), owners)).toEqual({
      network: "wbnet",
      cidr: "10.9.2.0/24",
      node: "gone-1",
    });
    expect(resolveOwner("wbnet-old", parseCidr("10.9.1.0/24"), owners)).toEqual({ network: "wbnet", cidr: "10.9.1.0/24", node: "old" });
  });

  it("anything else is the range's pool of network X", () => {
    // a network named like a node pool's prefix, but its CIDR lies in no NodeSlicePool's range
    expect(resolveOwner("wbnet-node-a", parseCidr("10.7.1.0/24"), owners)).toEqual({ network: "wbnet-node-a", cidr: "10.7.1.0/24" });
    // inside a sliced range, but neither `W-N` nor an assigned node
    expect(resolveOwner("blue", parseCidr("10.9.1.0/24"), owners)).toEqual({ network: "blue", cidr: "10.9.1.0/24" });
    expect(resolveOwner("wbnet", parseCidr("10.9.0.0/22"), owners)).toEqual({ network: "wbnet", cidr: "10.9.0.0/22" });
    expect(resolveOwner("fd-net", parseCidr("fd00::/64"), owners)).toEqual({ network: "fd-net", cidr: "fd00::/64" });
  });
});
