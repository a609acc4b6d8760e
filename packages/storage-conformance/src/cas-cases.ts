import { attachmentKey, Pool, PoolCorruptError, parseCidr, StoreConflictError, type StoredPool } from "@ipamkit/core";
import { expect, it } from "vitest";
import { registerClaimCases } from "./claim-cases.js";
import { key, type SuiteContext } from "./context.js";

const cidr = parseCidr("10.1.0.0/24");
const ref = { network: "", cidr: cidr.text };
const pool = (...ids: [number, string][]) =>
  Pool.fromReservations(
    cidr,
    ids.map(([offset, id]) => ({ offset: BigInt(offset), key: key(id) })),
  );
const ids = (p: Pool | undefined) => p?.reservations().map((r) => `${r.offset}:${r.key.containerId}`);

export function registerCasCases(ctx: SuiteContext): void {
  registerPoolWriteCases(ctx);
  registerPoolOrderCases(ctx);
  registerClaimCases(ctx);
  registerContractCases(ctx);
}

/** Pool writes: create-if-absent, compare-and-swap, a new version on every write. */
function registerPoolWriteCases(ctx: SuiteContext): void {
  it("reads an absent pool as undefined", async () => {
    expect(await ctx.store().readPool(ref)).toBeUndefined();
  });

  it("creates only if absent: a second create conflicts and writes nothing", async () => {
    const s = ctx.store();
    const v1 = await s.writePool(ref, pool([1, "a"]), undefined);
    await expect(s.writePool(ref, pool([2, "b"]), undefined)).rejects.toBeInstanceOf(StoreConflictError);
    const read = await s.readPool(ref);
    expect(read?.version).toBe(v1);
    expect(ids(read?.pool)).toEqual(["1:a"]);
  });

  it("compare-and-swap: a stale version conflicts and changes nothing; a current one wins", async () => {
    const s = ctx.store();
    const v1 = await s.writePool(ref, pool([1, "a"]), undefined);
    const v2 = await s.writePool(ref, pool([1, "a"], [2, "b"]), v1);
    expect(v2).not.toBe(v1);
    const err = await s.writePool(ref, pool([3, "c"]), v1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreConflictError);
    expect((err as StoreConflictError).code).toBe("STORE_CONFLICT");
    const read = await s.readPool(ref);
    expect(read?.version).toBe(v2);
    expect(ids(read?.pool)).toEqual(["1:a", "2:b"]);
  });

  it("changes the version on every write, even with identical content", async () => {
    const s = ctx.store();
    const p = pool([1, "a"]);
    const v1 = await s.writePool(ref, p, undefined);
    const v2 = await s.writePool(ref, p, v1);
    const v3 = await s.writePool(ref, p, v2);
    expect(new Set([v1, v2, v3]).size).toBe(3);
    await expect(s.writePool(ref, p, v2)).rejects.toBeInstanceOf(StoreConflictError);
  });
}

/** Pool contents and order: every field round-trips, reservations by offset, pools in one stable order. */
function registerPoolOrderCases(ctx: SuiteContext): void {
  it("round-trips every reservation field, IPv6 offsets above 2^64, and the round-robin cursor", async () => {
    const s = ctx.store();
    const v6 = parseCidr("2001:db8::/32");
    const r6 = { network: "net-a", cidr: v6.text };
    const big = (1n << 95n) + 12345n;
    const written = Pool.fromReservations(
      v6,
      [
        { offset: big, key: key("big"), podRef: "ns/p", podUid: "uid-1", createdAt: "2026-12-01T00:00:00.000Z" },
        { offset: 7n, key: attachmentKey({ containerId: "legacy", ifName: "" }, { allowLegacy: true }), podRef: "ns/old" },
      ],
      { lastOffset: big },
    );
    await s.writePool(r6, written, undefined);
    const read = (await s.readPool(r6))?.pool;
    expect(read?.reservations()).toEqual(written.reservations());
    expect(read?.lastOffset).toBe(big);
    expect(read?.cidr.text).toBe(v6.text);
  });

  it("keeps reservations in offset order whatever order they were written in", async () => {
    const s = ctx.store();
    await s.writePool(ref, pool([200, "z"], [3, "c"], [17, "q"], [1, "a"]), undefined);
    expect(ids((await s.readPool(ref))?.pool)).toEqual(["1:a", "3:c", "17:q", "200:z"]);
  });

  it("lists pools in one stable order: network, then CIDR text", async () => {
    const s = ctx.store();
    const refs = [
      { network: "blue", cidr: "10.9.0.0/24" },
      { network: "", cidr: "2001:db8::/64" },
      { network: "", cidr: "10.2.0.0/16" },
      { network: "blue", cidr: "10.10.0.0/24" },
      { network: "", cidr: "10.10.0.0/16" },
    ];
    for (const r of refs) await s.writePool(r, Pool.empty(parseCidr(r.cidr)), undefined);
    const expected = [
      { network: "", cidr: "10.10.0.0/16" },
      { network: "", cidr: "10.2.0.0/16" },
      { network: "", cidr: "2001:db8::/64" },
      { network: "blue", cidr: "10.10.0.0/24" },
      { network: "blue", cidr: "10.9.0.0/24" },
    ];
    expect(await s.listPools()).toEqual(expected);
    expect(await s.listPools()).toEqual(expected);
  });
}

/** The store's contract: the capabilities it was told, and corruption reported, never reset. */
function registerContractCases(ctx: SuiteContext): void {
  it("advertises exactly the capabilities the suite was told; commit refuses without transactions", async () => {
    const s = ctx.store();
    const told = ctx.options.capabilities ?? {};
    const { transactions, entryWrites, batchReads, bulkLists, nodePools } = s.capabilities;
    expect({ transactions, entryWrites, batchReads, bulkLists, nodePools }).toEqual({
      transactions: told.transactions === true,
      entryWrites: told.entryWrites === true,
      batchReads: told.batchReads === true,
      bulkLists: told.bulkLists === true,
      nodePools: told.nodePools === true,
    });
    if (!transactions)
      await expect(s.commit([{ kind: "check-pool", ref, expected: undefined }])).rejects.toMatchObject({ code: "STORE_REJECTED" });
  });

  it("reports corruption with a typed error and never resets the pool", async () => {
    const s = ctx.store();
    if (ctx.options.corruptPool === undefined) {
      // This store only holds validated Pool values: the corrupt state cannot even be built.
      expect(() => pool([5, "a"], [5, "b"])).toThrow(PoolCorruptError);
      expect(() => pool([5, "a"], [6, "a"])).toThrow(PoolCorruptError);
      return;
    }
    await s.writePool(ref, pool([1, "a"]), undefined);
    await ctx.options.corruptPool(s, ref);
    const err = await s.readPool(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(["STORE_CORRUPT", "POOL_CORRUPT"]).toContain((err as { code?: string }).code);
    // still corrupt: nothing reset it behind our back
    await expect(s.readPool(ref)).rejects.toBeInstanceOf(Error);
  });
}

export function registerCommitCases(ctx: SuiteContext): void {
  it("commit is all-or-nothing: one stale compare fails the whole transaction", async () => {
    const s = ctx.store();
    const other = { network: "", cidr: "10.2.0.0/24" };
    const v1 = await s.writePool(ref, pool([1, "a"]), undefined);
    const claimRef = { network: "", address: "10.1.0.1" };
    await expect(
      s.commit([
        { kind: "pool", ref, pool: pool([1, "a"], [2, "b"]), expected: v1 },
        { kind: "claim", ref: claimRef, claim: { pool: ref, key: key("b") }, expected: undefined },
        { kind: "check-pool", ref: other, expected: "12345" },
      ]),
    ).rejects.toBeInstanceOf(StoreConflictError);
    expect((await s.readPool(ref))?.version).toBe(v1);
    expect(await s.readClaim(claimRef)).toBeUndefined();
    const [v2, c1, checked] = await s.commit([
      { kind: "pool", ref, pool: pool([1, "a"], [2, "b"]), expected: v1 },
      { kind: "claim", ref: claimRef, claim: { pool: ref, key: key("b") }, expected: undefined },
      { kind: "check-pool", ref: other, expected: undefined },
    ]);
    expect((await s.readPool(ref))?.version).toBe(v2);
    expect((await s.readClaim(claimRef))?.version).toBe(c1);
    expect(checked).toBe("");
    await s.commit([{ kind: "delete-claim", ref: claimRef, expected: c1 as string }]);
    expect(await s.readClaim(claimRef)).toBeUndefined();
  });
}

export function registerEntryCases(ctx: SuiteContext): void {
  const res = (offset: number, id: string) => ({ offset: BigInt(offset), key: key(id), podRef: "ns/p" });
  it("reserve adds one entry and conflicts only on its own offset or key", async () => {
    const s = ctx.store();
    await s.commit([{ kind: "reserve", ref, reservation: res(1, "a"), lastOffset: 1n }]);
    const seen = await s.readPool(ref);
    // another entry, based on nothing newer: fine
    await s.commit([{ kind: "reserve", ref, reservation: res(2, "b"), lastOffset: 2n }]);
    await expect(s.commit([{ kind: "reserve", ref, reservation: res(1, "c"), lastOffset: 1n }])).rejects.toBeInstanceOf(StoreConflictError);
    await expect(s.commit([{ kind: "reserve", ref, reservation: res(3, "a"), lastOffset: 3n }])).rejects.toBeInstanceOf(StoreConflictError);
    const read = await s.readPool(ref);
    expect(ids(read?.pool)).toEqual(["1:a", "2:b"]);
    expect(read?.pool.lastOffset).toBe(2n);
    // the pool-level version still moved: a whole-pool write based on the older read conflicts
    await expect(s.writePool(ref, pool([1, "a"]), seen?.version)).rejects.toBeInstanceOf(StoreConflictError);
  });

  it("unreserve removes exactly an unchanged entry, and is all-or-nothing with the rest of the commit", async () => {
    const s = ctx.store();
    await s.commit([{ kind: "reserve", ref, reservation: res(1, "a"), lastOffset: undefined }]);
    await expect(s.commit([{ kind: "unreserve", ref, reservation: { ...res(1, "a"), podRef: "ns/other" } }])).rejects.toBeInstanceOf(
      StoreConflictError,
    );
    await expect(
      s.commit([
        { kind: "unreserve", ref, reservation: res(1, "a") },
        { kind: "reserve", ref: { network: "", cidr: "10.2.0.0/24" }, reservation: res(1, "z"), lastOffset: undefined },
        { kind: "check-pool", ref: { network: "", cidr: "10.3.0.0/24" }, expected: "999999" },
      ]),
    ).rejects.toBeInstanceOf(StoreConflictError);
    expect(ids((await s.readPool(ref))?.pool)).toEqual(["1:a"]);
    expect(await s.readPool({ network: "", cidr: "10.2.0.0/24" })).toBeUndefined();
    await s.commit([{ kind: "unreserve", ref, reservation: res(1, "a") }]);
    expect(ids((await s.readPool(ref))?.pool)).toEqual([]);
    await expect(s.commit([{ kind: "unreserve", ref, reservation: res(1, "a") }])).rejects.toBeInstanceOf(StoreConflictError);
  });
}

/** Pools listed with contents (one bulk read, or filled in by reads): each answer what readPool gives, in listPools' order; a corrupt pool reported in its place. */
export function registerPoolScanCases(ctx: SuiteContext): void {
  it("lists every pool with contents as readPool reads it, in listPools' order, a corrupt one reported in its place", async () => {
    const s = ctx.store();
    expect(await s.listPools({ contents: true })).toEqual([]);
    const refs = [
      { network: "b", cidr: "10.2.0.0/24" },
      { network: "", cidr: "10.9.0.0/24" },
      { network: "a", cidr: "10.3.0.0/24" },
      { network: "a", cidr: "10.1.0.0/24" },
    ];
    for (const [i, r] of refs.entries()) {
      const c = parseCidr(r.cidr);
      const p = Pool.fromReservations(c, [{ offset: BigInt(i + 1), key: key(`k${i}`), podRef: `ns/p${i}` }]);
      await s.writePool(r, p, undefined);
    }
    // written again: the scan gives the latest version
    const again = refs[2] as (typeof refs)[number];
    const before = (await s.readPool(again)) as StoredPool;
    await s.writePool(again, before.pool.with({ offset: 9n, key: key("again") }), before.version);
    const corrupt = refs[3] as (typeof refs)[number];
    if (ctx.options.corruptPool !== undefined) await ctx.options.corruptPool(s, corrupt);
    const scanned = await s.listPools({ contents: true });
    expect(scanned.map((x) => x.ref)).toEqual(await s.listPools());
    for (const x of scanned) {
      if ("error" in x) {
        expect(x.ref).toEqual(corrupt);
        expect(ctx.options.corruptPool).toBeDefined();
        const refused = await s.readPool(x.ref).catch((e: unknown) => e);
        expect((x.error as { code?: string }).code).toBeDefined();
        expect((refused as { code?: string }).code).toBe((x.error as { code?: string }).code);
        continue;
      }
      const read = await s.readPool(x.ref);
      expect(x.stored.version).toBe(read?.version);
      expect(ids(x.stored.pool)).toEqual(ids(read?.pool));
    }
    expect(scanned.filter((x) => "error" in x)).toHaveLength(ctx.options.corruptPool === undefined ? 0 : 1);
  });
}
