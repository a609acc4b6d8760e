import { attachmentKey, formatKey, Pool, parseCidr, type Reservation, StoreCorruptError, StoreRejectedError } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { ifNamesAnnotation, ipPoolFor, poolFromIPPool, WHEREABOUTS_OFFSET_LIMIT } from "./ippool.js";
import { ANNOTATION } from "./objects.js";

const v6 = { network: "", cidr: "2001:db8::/64" };
const write = { name: "2001-db8---64", namespace: "kube-system", writeId: "w", whereaboutsCompatible: true };

describe("IPPool ⇄ Pool", () => {
  it("reads offsets exactly, including IPv6 keys at and above 2^63 that Whereabouts drops", () => {
    const pool = poolFromIPPool(
      v6,
      {
        spec: {
          range: "2001:db8::/64",
          allocations: {
            "18446744073709551614": { id: "c3", podref: "ns/c", ifname: "net1" },
            "1": { id: "c1", podref: "ns/a", ifname: "net1" },
            "9223372036854775808": { id: "c2", podref: "ns/b" },
          },
        },
      },
      "2001-db8---64",
    );
    expect(pool.reservations().map((r) => r.offset)).toEqual([1n, 1n << 63n, (1n << 64n) - 2n]);
    expect(pool.forKey(attachmentKey({ containerId: "c2", ifName: "" }, { allowLegacy: true }))?.offset).toBe(1n << 63n);
  });

  it.each([
    ["-5", "not a decimal offset"],
    ["0x10", "not a decimal offset"],
    ["007", "not a decimal offset"],
    ["18446744073709551616", "outside 2001:db8::/64"],
  ])("reports the unreadable key %s, naming it, instead of dropping it", (key, reason) => {
    const read = () => poolFromIPPool(v6, { spec: { range: "2001:db8::/64", allocations: { [key]: { id: "c", podref: "a/b" } } } }, "p");
    expect(read).toThrow(StoreCorruptError);
    expect(read).toThrow(reason);
    expect(read).toThrow(JSON.stringify(key));
  });

  it.each([
    [{ podref: "a/b" }, '"id" must be a string'],
    [{ id: "", podref: "a/b" }, "containerId must be non-empty"],
    [{ id: "c", podref: 5 }, '"podref" must be a string'],
    ["text", "expected an object"],
  ])("reports an entry it cannot read: %j", (entry, reason) => {
    expect(() => poolFromIPPool(v6, { spec: { range: "2001:db8::/64", allocations: { "1": entry } } }, "p")).toThrow(reason);
  });

  it("refuses a pool whose spec.range is not the pool's range (a name collision)", () => {
    expect(() => poolFromIPPool(v6, { spec: { range: "2001:db8:1::/64", allocations: {} } }, "p")).toThrow(/name collision/);
  });

  it("keeps unknown entry fields and writes them back with the entries it knows", () => {
    const pool = poolFromIPPool(
      v6,
      { spec: { range: "2001:db8::/64", allocations: { "1": { id: "c1", podref: "ns/a", color: "red" } } } },
      "p",
    );
    const object = ipPoolFor(v6, pool, undefined, write);
    expect(object.spec?.allocations).toEqual({ "1": { id: "c1", podref: "ns/a", color: "red" } });
  });

  it("writes the cursor as an annotation and reads it back; no count annotation (a stale one is removed)", () => {
    const cidr = parseCidr("10.0.0.0/24");
    const pool = Pool.fromReservations(
      cidr,
      [{ offset: 7n, key: attachmentKey({ containerId: "c", ifName: "eth0" }), podUid: "u1", createdAt: "t" }],
      {
        lastOffset: 7n,
      },
    );
    const ref = { network: "", cidr: cidr.text };
    const stale = { metadata: { name: "10.0.0.0-24", annotations: { [ANNOTATION.staleAllocations]: "12" } }, spec: {} };
    const object = ipPoolFor(ref, pool, stale, { ...write, name: "10.0.0.0-24" });
    expect(object.metadata?.annotations?.[ANNOTATION.lastOffset]).toBe("7");
    expect(object.metadata?.annotations).not.toHaveProperty(ANNOTATION.staleAllocations);
    expect(object.metadata?.annotations).not.toHaveProperty(ANNOTATION.ifnames);
    expect(object.spec).toEqual({
      range: "10.0.0.0/24",
      allocations: { "7": { id: "c", podref: "", ifname: "eth0", poduid: "u1", created: "t" } },
    });
    const back = poolFromIPPool(ref, object, "p");
    expect(back.lastOffset).toBe(7n);
    expect(back.reservations()).toEqual(pool.reservations());
  });

  it("refuses to write a new offset ≥ 2^63 while Whereabouts readers may remain, keeps existing ones", () => {
    const cidr = parseCidr(v6.cidr);
    const high = { offset: WHEREABOUTS_OFFSET_LIMIT, key: attachmentKey({ containerId: "c", ifName: "net1" }) };
    const pool = Pool.fromReservations(cidr, [high]);
    expect(() => ipPoolFor(v6, pool, undefined, write)).toThrow(StoreRejectedError);
    expect(() => ipPoolFor(v6, pool, undefined, write)).toThrow(/2\^63/);
    expect(ipPoolFor(v6, pool, undefined, { ...write, whereaboutsCompatible: false }).spec?.allocations).toHaveProperty(
      WHEREABOUTS_OFFSET_LIMIT.toString(),
    );
    const base = {
      spec: { range: v6.cidr, allocations: { [WHEREABOUTS_OFFSET_LIMIT.toString()]: { id: "c", podref: "", ifname: "net1" } } },
    };
    expect(ipPoolFor(v6, pool, base, write).spec?.allocations).toHaveProperty(WHEREABOUTS_OFFSET_LIMIT.toString());
  });

  it("keeps everything of the object it writes over but the allocations and its annotations", () => {
    const base = {
      metadata: { name: "p", resourceVersion: "9", labels: { a: "b" }, annotations: { other: "x" } },
      spec: { range: "10.0.0.0/24", allocations: { "1": { id: "old", podref: "" } }, future: true },
      status: { seen: 1 },
    };
    const object = ipPoolFor({ network: "", cidr: "10.0.0.0/24" }, Pool.empty(parseCidr("10.0.0.0/24")), base, { ...write, name: "p" });
    expect(object).toMatchObject({
      metadata: { resourceVersion: "9", labels: { a: "b" } },
      spec: { future: true, allocations: {} },
      status: { seen: 1 },
    });
    expect(object.metadata?.annotations?.other).toBe("x");
  });

  it("records interfaces in ipamkit.io/ifnames when told (a CRD that prunes ifname), trusted only for the same container id", () => {
    const cidr = parseCidr("10.0.0.0/24");
    const ref = { network: "", cidr: cidr.text };
    const pool = Pool.fromReservations(cidr, [
      { offset: 1n, key: attachmentKey({ containerId: "c", ifName: "net1" }) },
      { offset: 2n, key: attachmentKey({ containerId: "c", ifName: "net2" }) },
      { offset: 3n, key: attachmentKey({ containerId: "w", ifName: "" }, { allowLegacy: true }) },
    ]);
    const object = ipPoolFor(ref, pool, undefined, { ...write, name: "10.0.0.0-24", recordIfNames: true });
    const hints = JSON.parse(object.metadata?.annotations?.[ANNOTATION.ifnames] ?? "{}") as Record<string, string>;
    expect(Object.keys(hints)).toEqual(["1", "2"]);
    // what a CRD without ifname stores: the field pruned, the annotation kept
    const pruned = structuredClone(object);
    for (const entry of Object.values(pruned.spec?.allocations as Record<string, Record<string, unknown>>)) delete entry.ifname;
    expect(poolFromIPPool(ref, pruned, "p").reservations()).toEqual(pool.reservations());
    // Whereabouts gave offset 2 to another container: the hint is not its own, the entry is legacy
    (pruned.spec?.allocations as Record<string, Record<string, unknown>>)["2"] = { id: "other", podref: "ns/o" };
    expect(formatKey((poolFromIPPool(ref, pruned, "p").atOffset(2n) as Reservation).key)).toBe("other/");
    // an ifname stored in the entry wins over any hint; a malformed annotation is no hint
    expect(formatKey((poolFromIPPool(ref, object, "p").atOffset(1n) as Reservation).key)).toBe("c/net1");
    pruned.metadata = { ...pruned.metadata, annotations: { [ANNOTATION.ifnames]: "{not json" } };
    expect(formatKey((poolFromIPPool(ref, pruned, "p").atOffset(1n) as Reservation).key)).toBe("c/");
    expect(ifNamesAnnotation(Pool.empty(cidr))).toBe("{}");
  });
});
