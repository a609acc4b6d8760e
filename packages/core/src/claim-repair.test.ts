import { describe, expect, it } from "vitest";
import { repairClaim } from "./claim-repair.js";
import { delegatingStore } from "./complete-store.js";
import { parseCidr } from "./ip.js";
import { createIpam } from "./ipam.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { Pool } from "./pool.js";
import { parseRange } from "./range.js";
import type { Claim, IpamStore, PoolRef } from "./store.js";

const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const range = parseRange({ range: "10.0.0.0/29" });
const pool: PoolRef = { network: "", cidr: range.cidr.text };
const wide: PoolRef = { network: "", cidr: "10.0.0.0/28" };
const first = { network: "", address: "10.0.0.1" };
const noSleep = { sleep: async () => {} };

/** A pool holding `id` at offset 1 (10.0.0.1), as allocator `id` would write it. */
const holding = (ref: PoolRef, id: string) =>
  Pool.empty(parseCidr(ref.cidr)).with({ offset: 1n, key: key(id), podRef: `ns/${id}` }, { moveCursor: false });
const claimFor = (ref: PoolRef, id: string): Claim => ({ pool: ref, key: key(id), podRef: `ns/${id}` });

describe("an allocation that loses its pool write after taking over a fresh claim (stores without transactions)", () => {
  it("leaves the claim naming the winner's entry, not itself", async () => {
    const shared = createMemoryStore();
    let claimWrites = 0;
    let poolWrites = 0;
    // allocator A acts at the worst moments for B: its claim lands just before B's, its pool write just before B's
    const b: IpamStore = delegatingStore(shared, {
      async writeClaim(ref, claim, expected) {
        if (++claimWrites === 1) await shared.writeClaim(ref, claimFor(pool, "a"), undefined);
        return shared.writeClaim(ref, claim, expected);
      },
      async writePool(ref, p, expected) {
        if (++poolWrites === 1) await shared.writePool(ref, holding(pool, "a"), undefined);
        return shared.writePool(ref, p, expected);
      },
    });
    const [got] = await createIpam({ store: b, retry: noSleep }).allocate({ ranges: [range], key: key("b"), podRef: "ns/b" });
    expect(got?.address.value).toBe(parseCidr("10.0.0.2/32").network);
    // B took A's fresh claim over (A looked dangling), lost the pool to A, and gave the claim back
    expect((await shared.readClaim(first))?.claim).toEqual(claimFor(pool, "a"));
    expect((await shared.readClaim({ network: "", address: "10.0.0.2" }))?.claim).toEqual(claimFor(pool, "b"));
    // A's DEL then leaves nothing behind
    await createIpam({ store: shared }).release({ ranges: [range], key: key("a") });
    expect(await shared.listClaims("")).toEqual([{ network: "", address: "10.0.0.2" }]);
  });
});

describe("repairClaim", () => {
  it("deletes a claim whose address no pool holds, after fencing the pool it names", async () => {
    const store = createMemoryStore();
    const before = await store.writePool(pool, Pool.empty(range.cidr), undefined);
    const version = await store.writeClaim(first, claimFor(pool, "gone"), undefined);
    expect(await repairClaim(store, first, { expected: version })).toEqual({ kind: "deleted" });
    expect(await store.readClaim(first)).toBeUndefined();
    // the fence: an allocation that read the pool before the repair cannot land the address any more
    expect((await store.readPool(pool))?.version).not.toBe(before);
  });

  it("rewrites a claim naming another key of the pool to the entry's key and podRef", async () => {
    const store = createMemoryStore();
    await store.writePool(pool, holding(pool, "a"), undefined);
    await store.writeClaim(first, claimFor(pool, "b"), undefined);
    expect(await repairClaim(store, first)).toEqual({ kind: "rewritten", claim: claimFor(pool, "a") });
    expect((await store.readClaim(first))?.claim).toEqual(claimFor(pool, "a"));
    expect(await repairClaim(store, first)).toEqual({ kind: "consistent" });
  });

  it("points a claim at the overlapping pool that holds the address, and leaves a claim changed since observed", async () => {
    const store = createMemoryStore();
    await store.writePool(wide, holding(wide, "w"), undefined);
    const observed = await store.writeClaim(first, claimFor(pool, "b"), undefined);
    const newer = await store.writeClaim(first, claimFor(pool, "c"), observed);
    expect(await repairClaim(store, first, { expected: observed, pools: [wide] })).toEqual({ kind: "changed" });
    expect((await store.readClaim(first))?.version).toBe(newer);
    expect(await repairClaim(store, first, { expected: newer, pools: [wide] })).toEqual({ kind: "rewritten", claim: claimFor(wide, "w") });
    expect(await repairClaim(store, { network: "", address: "10.0.0.5" })).toEqual({ kind: "absent" });
  });

  it("leaves an address two pools hold to an operator", async () => {
    const store = createMemoryStore();
    await store.writePool(wide, holding(wide, "w"), undefined);
    await store.writePool(pool, holding(pool, "a"), undefined);
    await store.writeClaim(first, claimFor(pool, "a"), undefined);
    expect(await repairClaim(store, first, { pools: [wide] })).toEqual({ kind: "ambiguous", holders: [pool, wide] });
  });
});
