import { createIpam, formatIp, type PoolRef, parseRange, type Range, sliceRange } from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

// Whereabouts' node slices (core DESIGN.md, "Node slices"): a node allocates in its slice of a
// range, in a pool of its own (`PoolRef.node`: Whereabouts' `<network>-<node>-<slice>` IPPool),
// while the claims stay the network's (`<network>-<ip>` ORIPs).

const NET = "slicenet";
const range = parseRange({ range: "10.70.0.0/22", exclude: ["10.70.1.1/32", "10.70.1.8/30"] });
const slice = (text: string): Range => sliceRange(range, text) as Range;
const A = slice("10.70.1.0/24");
const B = slice("10.70.2.0/24");
const v6range = parseRange({ range: "fd70::/112", exclude: ["fd70::101"] });
const V6 = sliceRange(v6range, "fd70::100/120") as Range;
const text = (a: { address: { family: 4 | 6; value: bigint } } | undefined) => (a === undefined ? "none" : formatIp(a.address));

/** Stores with `capabilities.nodePools`: node-slice pools kept apart, listed with their node, allocated in by exact key. */
export function registerSliceCases(ctx: SuiteContext): void {
  it("a node's slice pool is apart from the range's pool of its CIDR and from another node's, and is listed with its node", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s, overlappingRanges: false });
    const [onA] = await i.allocate({ network: NET, node: "node-a", ranges: [A], key: key("a") });
    const [plain] = await i.allocate({ network: NET, ranges: [parseRange({ range: "10.70.1.0/24" })], key: key("p") });
    const [onB] = await i.allocate({ network: NET, node: "node-b", ranges: [A], key: key("b") });
    // each pool is empty to the others: the lowest usable address each time
    expect([text(onA), text(plain), text(onB)]).toEqual(["10.70.1.2", "10.70.1.1", "10.70.1.2"]);
    const refs = (await s.listPools()).filter((r) => r.network === NET);
    expect(refs).toEqual([
      { network: NET, cidr: "10.70.1.0/24" },
      { network: NET, cidr: "10.70.1.0/24", node: "node-a" },
      { network: NET, cidr: "10.70.1.0/24", node: "node-b" },
    ]);
    const scanned = (await s.listPools({ contents: true })).filter((p) => p.ref.network === NET);
    expect(
      scanned.map((p) => ("stored" in p ? [p.ref.node ?? "", p.stored.pool.reservations().map((r) => r.key.containerId)] : p.error)),
    ).toEqual([
      ["", ["p"]],
      ["node-a", ["a"]],
      ["node-b", ["b"]],
    ]);
  });

  it("allocates lowest-free in the slice (offsets from the slice's network), honouring the range's excludes, and releases by exact key", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    const got: string[] = [];
    for (const c of ["a1", "a2", "a3", "a4", "a5", "a6"]) {
      const [a] = await i.allocate({ network: NET, node: "node-a", ranges: [A], key: key(c) });
      got.push(text(a));
      expect(a?.pool).toEqual({ network: NET, cidr: "10.70.1.0/24", node: "node-a" });
    }
    // .1 and .8-.11 are excluded; the slice's network address is never handed out
    expect(got).toEqual(["10.70.1.2", "10.70.1.3", "10.70.1.4", "10.70.1.5", "10.70.1.6", "10.70.1.7"]);
    const ref: PoolRef = { network: NET, cidr: A.cidr.text, node: "node-a" };
    expect((await s.readPool(ref))?.pool.reservations().map((r) => r.offset)).toEqual([2n, 3n, 4n, 5n, 6n, 7n]);
    // a release without the node, or as another node, or of another key, frees nothing here
    expect(await i.release({ network: NET, ranges: [A], key: key("a3") })).toEqual([]);
    expect(await i.release({ network: NET, node: "node-b", ranges: [A], key: key("a3") })).toEqual([]);
    expect(await i.release({ network: NET, node: "node-a", ranges: [A], key: key("a3", "net9") })).toEqual([]);
    const [freed] = await i.release({ network: NET, node: "node-a", ranges: [A], key: key("a3") });
    expect(text(freed)).toBe("10.70.1.4");
    expect((await s.readPool(ref))?.pool.reservations().map((r) => r.key.containerId)).toEqual(["a1", "a2", "a4", "a5", "a6"]);
    // the claims stay the network's, one per address held
    expect((await s.listClaims(NET)).map((c) => c.address)).toEqual(["10.70.1.2", "10.70.1.3", "10.70.1.5", "10.70.1.6", "10.70.1.7"]);
    const [again] = await i.allocate({ network: NET, node: "node-a", ranges: [A], key: key("a1") });
    expect(text(again)).toBe("10.70.1.2");
    expect((await i.lookup({ network: NET, node: "node-a", ranges: [A], key: key("a5") })).map(text)).toEqual(["10.70.1.6"]);
    expect((await i.lookup({ network: NET, ranges: [A], key: key("a5") })).map(text)).toEqual(["none"]);
  });

  it("a claim names its node's pool: a slice moved to another node never hands out an address the old node's pool holds", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    for (const c of ["old1", "old2"]) await i.allocate({ network: NET, node: "gone", ranges: [B], key: key(c) });
    const claim = await s.readClaim({ network: NET, address: "10.70.2.1" });
    expect(claim?.claim.pool).toEqual({ network: NET, cidr: "10.70.2.0/24", node: "gone" });
    // the same slice, now another node's: its own pool is empty, the claims keep the old addresses out
    const got: string[] = [];
    for (const c of ["new1", "new2"]) got.push(text((await i.allocate({ network: NET, node: "fresh", ranges: [B], key: key(c) }))[0]));
    expect(got).toEqual(["10.70.2.3", "10.70.2.4"]);
    await i.release({ network: NET, node: "gone", ranges: [B], key: key("old1") });
    expect(text((await i.allocate({ network: NET, node: "fresh", ranges: [B], key: key("new3") }))[0])).toBe("10.70.2.1");
    const addresses = (await s.listClaims(NET)).map((c) => c.address);
    expect(addresses).toEqual(["10.70.2.1", "10.70.2.2", "10.70.2.3", "10.70.2.4"]);
  });

  it("concurrent allocators on one node's slice never hand out an address twice", async () => {
    const s = ctx.store();
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, w) =>
        (async () => {
          const i = createIpam({ store: s, retry: { attempts: 1000, baseDelayMs: 1, maxDelayMs: 20 } });
          const out: string[] = [];
          for (let n = 0; n < 6; n++)
            out.push(text((await i.allocate({ network: NET, node: "node-a", ranges: [A], key: key(`w${w}-${n}`) }))[0]));
          return out;
        })(),
      ),
    );
    const all = results.flat();
    expect(new Set(all).size).toBe(24);
    const held = (await s.readPool({ network: NET, cidr: A.cidr.text, node: "node-a" }))?.pool.reservations() ?? [];
    expect(held).toHaveLength(24);
  });

  it("an IPv6 slice: lowest free from the slice's network + 1, excludes honoured", async () => {
    const i = createIpam({ store: ctx.store() });
    const got: string[] = [];
    for (const c of ["x", "y"]) got.push(text((await i.allocate({ network: NET, node: "node-a", ranges: [V6], key: key(c) }))[0]));
    expect(got).toEqual(["fd70::102", "fd70::103"]);
  });
}

/** Stores without `capabilities.nodePools`: a node-slice ref is refused, never served from the range's pool of its CIDR. */
export function registerNoSliceCases(ctx: SuiteContext): void {
  it("refuses node-slice pools (StoreRejectedError) and leaves the range's pool untouched", async () => {
    const s = ctx.store();
    const i = createIpam({ store: s });
    await expect(i.allocate({ network: NET, node: "node-a", ranges: [A], key: key("a") })).rejects.toMatchObject({
      code: "STORE_REJECTED",
    });
    await expect(s.readPool({ network: NET, cidr: A.cidr.text, node: "node-a" })).rejects.toMatchObject({ code: "STORE_REJECTED" });
    expect(await s.listPools()).toEqual([]);
  });
}
