import { InvalidRangeError } from "./errors.js";
import { type Cidr, cidrContains, parseCidr } from "./ip.js";
import { subRange } from "./node-blocks.js";
import type { Range } from "./range.js";

/**
 * Whereabouts' node slices (`node_slice_size`): a node allocates only in its slice of a range, a
 * CIDR that its NodeSlicePool assigns it, in a pool of its own (`PoolRef.node`). The slice as a
 * range of its own: its CIDR is the slice (so pool offsets count from the slice's network address,
 * as in Whereabouts' per-slice IPPool); its usable span is the slice's (network + 1 … last − 1, as
 * Whereabouts' FirstUsableIP/LastUsableIP) within the parent range's, and the parent's excludes
 * and gateway stay blocked (Whereabouts drops `exclude`, `range_start` and `range_end` in a slice;
 * ipamkit keeps them). The gateway stays the parent's, for results.
 *
 * Undefined when the slice holds no usable address of the range (outside range_start/range_end,
 * or all excluded). InvalidRangeError when `slice` is not a CIDR inside the range's.
 */
export function sliceRange(range: Range, slice: Cidr | string): Range | undefined {
  let cidr: Cidr;
  try {
    cidr = typeof slice === "string" ? parseCidr(slice) : slice;
  } catch {
    throw new InvalidRangeError("sliceRange", String(slice), "not a CIDR");
  }
  const parent = range.cidr;
  if (cidr.family !== parent.family || cidr.prefix < parent.prefix || !cidrContains(parent, { family: cidr.family, value: cidr.network })) {
    throw new InvalidRangeError("sliceRange", cidr.text, `not a slice of range ${parent.text}`);
  }
  if (cidr.size < 4n) return undefined;
  // usable: the slice's network + 1 … last − 1, as Whereabouts' FirstUsableIP/LastUsableIP
  return subRange(range, cidr, cidr.network - parent.network, 1n, cidr.size - 2n);
}
