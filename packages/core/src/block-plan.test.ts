import { describe, expect, it } from "vitest";
import { type AddPlanInput, type Known, MAX_FENCED_BLOCKS, type NodeView, planAdd, recalledHolder } from "./block-plan.js";
import { attachmentKey } from "./key.js";
import { blockLayout, blockRange } from "./node-blocks.js";
import { Pool } from "./pool.js";
import { parseRange, type Range } from "./range.js";

// The planner alone: what an ADD reads, and what it decides from what it has read, with no store.
const RANGE = parseRange({ range: "10.0.0.0/26" });
const layout = blockLayout(RANGE, 4);
const block = (i: number) => blockRange(layout, BigInt(i)) as Range;
const [b0, b1, b2] = [block(1), block(2), block(3)];
const k = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const KEY = k("me");

/** A block's pool holding `ids` at its first offsets (`full`: every assignable offset taken). */
function known(b: Range, ids: string[], opts: { fresh?: boolean; full?: boolean; version?: string } = {}): Known {
  let pool = Pool.empty(b.cidr, { name: b.cidr.text });
  const names = opts.full ? [...ids, ...Array.from({ length: 4 }, (_, i) => `fill-${String(b.cidr.network)}-${i}`)] : ids;
  let offset = b.first;
  for (const id of names) {
    if (offset > b.last) break;
    pool = pool.with({ offset, key: k(id) });
    offset += 1n;
  }
  return { stored: { pool, version: opts.version ?? "7" }, fresh: opts.fresh ?? false };
}

const input = (view: NodeView, entries: [Range, Known][]): AddPlanInput => ({ view, known: new Map(entries), key: KEY });

describe("planAdd", () => {
  it("one block recalled with room: writes it unread, fencing the first unclaimed block as unclaimed", () => {
    const view = { own: [b0], unclaimed: b1, others: [] };
    expect(planAdd(input(view, [[b0, known(b0, ["a"])]]))).toEqual({
      kind: "write",
      block: b0,
      fences: [{ block: b1, expected: undefined, unclaimed: true }],
    });
  });

  it("a key held as recalled is read before it is answered; read afresh and held, it is answered without a write", () => {
    const view = { own: [b0], unclaimed: b1, others: [] };
    expect(planAdd(input(view, [[b0, known(b0, ["me"])]]))).toEqual({ kind: "read", block: b0 });
    expect(planAdd(input(view, [[b0, known(b0, ["me"], { fresh: true })]]))).toEqual({ kind: "held", block: b0 });
  });

  it("without recalls, reads blocks one by one in order and stops at the block holding the key", () => {
    const view = { own: [b0, b1], unclaimed: b2, others: [] };
    expect(planAdd(input(view, []))).toEqual({ kind: "read", block: b0 });
    expect(planAdd(input(view, [[b0, known(b0, ["me"], { fresh: true })]]))).toEqual({ kind: "held", block: b0 });
    expect(planAdd(input(view, [[b0, known(b0, ["a"], { fresh: true, full: true })]]))).toEqual({ kind: "read", block: b1 });
  });

  it("fences every other block the choice rested on at the version it saw, and the unclaimed one as absent", () => {
    const view = { own: [b0, b1], unclaimed: b2, others: [] };
    const plan = planAdd(
      input(view, [
        [b0, known(b0, ["a"], { fresh: true, full: true, version: "11" })],
        [b1, known(b1, [], { fresh: true, version: "12" })],
      ]),
    );
    expect(plan).toEqual({
      kind: "write",
      block: b1,
      fences: [
        { block: b0, expected: "11" },
        { block: b2, expected: undefined, unclaimed: true },
      ],
    });
  });

  it("over two blocks, all recalled: writes the first with room unread, fencing the other at its recalled version", () => {
    const view = { own: [b0, b1], unclaimed: b2, others: [] };
    const recalls: [Range, Known][] = [
      [b0, known(b0, ["a"], { full: true, version: "5" })],
      [b1, known(b1, ["b"])],
    ];
    const unclaimed = { block: b2, expected: undefined, unclaimed: true };
    expect(planAdd(input(view, recalls))).toEqual({ kind: "write", block: b1, fences: [{ block: b0, expected: "5" }, unclaimed] });
  });

  it("over two blocks, one read afresh: keeps the newest block with room as recalled and reads the other", () => {
    const view = { own: [b0, b1], unclaimed: b2, others: [] };
    const recalled: [Range, Known] = [b1, known(b1, ["b"], { version: "6" })];
    const unclaimed = { block: b2, expected: undefined, unclaimed: true };
    const firstFull: [Range, Known] = [b0, known(b0, ["a"], { fresh: true, full: true, version: "5" })];
    expect(planAdd(input(view, [firstFull, recalled]))).toEqual({
      kind: "write",
      block: b1,
      fences: [{ block: b0, expected: "5" }, unclaimed],
    });
    // the first block has room after all: it is written, and the kept one is read first ("not held" is never recalled)
    const firstRoom: [Range, Known] = [b0, known(b0, [], { fresh: true })];
    expect(planAdd(input(view, [firstRoom, recalled]))).toEqual({ kind: "read", block: b1 });
    expect(planAdd(input(view, [firstRoom, [b1, known(b1, ["me"], { fresh: true })]]))).toEqual({ kind: "held", block: b1 });
    expect(planAdd(input(view, [firstRoom, [b1, known(b1, ["b"], { fresh: true, version: "8" })]]))).toEqual({
      kind: "write",
      block: b0,
      fences: [{ block: b1, expected: "8" }, unclaimed],
    });
  });

  it("no room: claims the first unclaimed block (then plans again); nothing unclaimed: full", () => {
    const full: [Range, Known] = [b0, known(b0, ["a"], { fresh: true, full: true, version: "3" })];
    expect(planAdd(input({ own: [b0], unclaimed: b1, others: [] }, [full]))).toEqual({ kind: "claim", block: b1 });
    expect(planAdd(input({ own: [b0], unclaimed: undefined, others: [] }, [full]))).toEqual({ kind: "full" });
  });

  it("past MAX_FENCED_BLOCKS (a borrowing node): reads every block rather than choose from recalls, and fences them all", () => {
    const others = Array.from({ length: MAX_FENCED_BLOCKS + 1 }, (_, i) => block(4 + i));
    const view = { own: [b0], unclaimed: undefined, others };
    const recalls: [Range, Known][] = [
      [b0, known(b0, [], { version: "1" })],
      ...others.map((o): [Range, Known] => [o, known(o, ["x"], { full: true, version: "2" })]),
    ];
    expect(planAdd(input(view, recalls))).toEqual({ kind: "read", block: others[0] });
    const reads = recalls.map(([b, k]): [Range, Known] => [b, { ...k, fresh: true }]);
    expect(planAdd(input(view, reads))).toEqual({
      kind: "write",
      block: b0,
      fences: others.map((o) => ({ block: o, expected: "2" })),
    });
  });
});

describe("recalledHolder", () => {
  it("names the block whose recalled pool holds the key, or none", () => {
    const pools = new Map([
      [b0, known(b0, ["a"]).stored],
      [b1, known(b1, ["me"]).stored],
    ]);
    expect(recalledHolder([b0, b1], (b) => pools.get(b), KEY)).toBe(b1);
    expect(recalledHolder([b0], (b) => pools.get(b), KEY)).toBeUndefined();
  });
});
