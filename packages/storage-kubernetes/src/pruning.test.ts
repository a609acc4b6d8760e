import { attachmentKey, Pool, parseCidr } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { fieldsKept, ifNamesPruned, warnPruningOnce } from "./pruning.js";

const cidr = parseCidr("10.0.0.0/24");
const key = (c: string) => attachmentKey({ containerId: c, ifName: "net1" });

describe("fieldsKept: did the API server prune ipamkit's entry fields?", () => {
  const pool = Pool.fromReservations(cidr, [
    { offset: 1n, key: key("a") },
    { offset: 2n, key: key("b"), podUid: "uid-b", createdAt: "2026-12-02T00:00:00.000Z" },
  ]);

  it("is true when the stored entries still carry poduid and created", () => {
    const written = {
      spec: {
        allocations: { "1": { id: "a", podref: "" }, "2": { id: "b", podref: "", poduid: "uid-b", created: "2026-12-02T00:00:00.000Z" } },
      },
    };
    expect(fieldsKept(pool, written)).toBe(true);
  });

  it("is false when the schema pruned them (Whereabouts' own CRD declares only id, podref, ifname)", () => {
    const written = { spec: { allocations: { "1": { id: "a", podref: "" }, "2": { id: "b", podref: "" } } } };
    expect(fieldsKept(pool, written)).toBe(false);
  });

  it("is false when unknown entry fields were pruned", () => {
    const withExtra = Pool.fromReservations(cidr, [{ offset: 3n, key: key("c"), extra: { color: "red" } }]);
    expect(fieldsKept(withExtra, { spec: { allocations: { "3": { id: "c", podref: "" } } } })).toBe(false);
    expect(fieldsKept(withExtra, { spec: { allocations: { "3": { id: "c", podref: "", color: "red" } } } })).toBe(true);
  });

  it("is true for pools with nothing to prune", () => {
    expect(fieldsKept(Pool.fromReservations(cidr, [{ offset: 1n, key: key("a") }]), { spec: { allocations: {} } })).toBe(true);
  });
});

describe("warnPruningOnce", () => {
  it("tells once per process, whatever the store or the pool, and says what to apply", () => {
    const told: string[] = [];
    warnPruningOnce((m) => told.push(m), "IPPool ns/10.0.0.0-24", true);
    warnPruningOnce((m) => told.push(m), "IPPool ns/10.1.0.0-24", false);
    warnPruningOnce((m) => told.push(m), "IPPool other/10.0.0.0-24", true);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/ifname, poduid, created/);
    expect(told[0]).toMatch(/kubectl apply -f manifests\/crds\.yaml/);
  });
});

describe("ifNamesPruned", () => {
  const pool = Pool.fromReservations(cidr, [{ offset: 1n, key: key("a") }]);
  it("is true when the stored entry lost the ifname ipamkit wrote", () => {
    expect(ifNamesPruned(pool, { spec: { allocations: { "1": { id: "a", podref: "" } } } })).toBe(true);
    expect(ifNamesPruned(pool, { spec: { allocations: { "1": { id: "a", podref: "", ifname: "net1" } } } })).toBe(false);
  });
  it("is false for a pool of entries without ifname only", () => {
    const legacy = Pool.fromReservations(cidr, [
      { offset: 1n, key: attachmentKey({ containerId: "w", ifName: "" }, { allowLegacy: true }) },
    ]);
    expect(ifNamesPruned(legacy, { spec: { allocations: { "1": { id: "w", podref: "" } } } })).toBe(false);
  });
});
