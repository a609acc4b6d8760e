import {
  attachmentKey,
  createIpam,
  formatIp,
  formatKey,
  Pool,
  type PoolRef,
  parseRange,
  type Reservation,
  StoreRejectedError,
} from "@ipamkit/core";
import { expect, it } from "vitest";
import { key, type SuiteContext } from "./context.js";

// Legacy entries: Whereabouts < 0.8 writes no ifname (core DESIGN.md, "Legacy entries"). A
// container's attachment without an exact entry adopts (ADD) or frees (DEL) the lowest legacy
// entry of its container; several of one container are a legal state where the store can hold
// them (options.legacyEntries).

const range = parseRange({ range: "10.40.0.0/24" });
const ref: PoolRef = { network: "", cidr: range.cidr.text };
const legacy = (offset: bigint, containerId: string): Reservation => ({
  offset,
  key: attachmentKey({ containerId, ifName: "" }, { allowLegacy: true }),
  podRef: `ns/${containerId}`,
});
const shape = (pool: Pool | undefined) => pool?.reservations().map((r) => `${r.offset}=${formatKey(r.key)}`);

export function registerLegacyCases(ctx: SuiteContext): void {
  const several = ctx.options.legacyEntries !== "one";
  const seed = async (...entries: Reservation[]) => {
    await ctx.store().writePool(ref, Pool.fromReservations(range.cidr, entries), undefined);
    return createIpam({ store: ctx.store() });
  };
  const read = async () => (await ctx.store().readPool(ref))?.pool;
  const addresses = (list: readonly { address: Parameters<typeof formatIp>[0] }[]) => list.map((a) => formatIp(a.address));

  it("ADD of a container's attachment adopts its legacy entry: same address, the exact key stored, no second address", async () => {
    const ipam = await seed(legacy(5n, "c"), legacy(9n, "d"));
    expect(addresses(await ipam.allocate({ ranges: [range], key: key("c", "net1"), podRef: "ns/c" }))).toEqual(["10.40.0.5"]);
    expect(shape(await read())).toEqual(["5=c/net1", "9=d/"]);
    expect(addresses(await ipam.allocate({ ranges: [range], key: key("c", "net1") }))).toEqual(["10.40.0.5"]);
    // the container's next interface has no legacy entry left: a new address
    expect(addresses(await ipam.allocate({ ranges: [range], key: key("c", "net2") }))).toEqual(["10.40.0.1"]);
    expect((await read())?.size).toBe(3);
  });

  it("DEL with no exact entry frees its container's legacy entry; lookup (CHECK) answers the same one", async () => {
    const ipam = await seed(legacy(5n, "c"), legacy(9n, "d"));
    expect(addresses((await ipam.lookup({ ranges: [range], key: key("c", "eth0") })).flatMap((a) => (a === undefined ? [] : [a])))).toEqual(
      ["10.40.0.5"],
    );
    expect(addresses(await ipam.release({ ranges: [range], key: key("x", "eth0") }))).toEqual([]);
    expect(addresses(await ipam.release({ ranges: [range], key: key("c", "eth0") }))).toEqual(["10.40.0.5"]);
    expect(shape(await read())).toEqual(["9=d/"]);
  });

  if (!several) {
    it("refuses to write several legacy entries of one container (it could not read them back)", async () => {
      const pool = Pool.fromReservations(range.cidr, [legacy(4n, "c"), legacy(9n, "c")]);
      await expect(ctx.store().writePool(ref, pool, undefined)).rejects.toBeInstanceOf(StoreRejectedError);
      expect(await ctx.store().readPool(ref)).toBeUndefined();
    });
    return;
  }

  it("several legacy entries of one container are a legal state: read back as written", async () => {
    await seed(legacy(9n, "c"), legacy(4n, "c"), legacy(6n, "d"));
    const pool = await read();
    expect(shape(pool)).toEqual(["4=c/", "6=d/", "9=c/"]);
    expect(pool?.legacyOf("c").map((r) => r.offset)).toEqual([4n, 9n]);
  });

  it("each interface's ADD adopts a distinct legacy entry of its container (lowest first); each DEL frees one", async () => {
    const ipam = await seed(legacy(9n, "c"), legacy(4n, "c"));
    expect(addresses(await ipam.allocate({ ranges: [range], key: key("c", "net1") }))).toEqual(["10.40.0.4"]);
    expect(addresses(await ipam.allocate({ ranges: [range], key: key("c", "net2") }))).toEqual(["10.40.0.9"]);
    expect(shape(await read())).toEqual(["4=c/net1", "9=c/net2"]);
    expect(addresses(await ipam.release({ ranges: [range], key: key("c", "net2") }))).toEqual(["10.40.0.9"]);
    expect(addresses(await ipam.release({ ranges: [range], key: key("c", "net1") }))).toEqual(["10.40.0.4"]);
    expect((await read())?.size).toBe(0);
  });

  it("a conditional release (the reconciler's) frees exactly the legacy entry observed, not its container's lowest", async () => {
    const ipam = await seed(legacy(9n, "c"), legacy(4n, "c"));
    const nine = (await read())?.atOffset(9n) as Reservation;
    expect(await ipam.releaseAllIf(ref, [nine])).toEqual(["released"]);
    expect(shape(await read())).toEqual(["4=c/"]);
  });
}
