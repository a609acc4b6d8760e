import { attachmentKey, StoreCorruptError } from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import { ANNOTATION } from "./objects.js";
import { readReservation, reservationFor } from "./orip.js";

const ref = { network: "", address: "10.0.0.5" };
const claim = { pool: { network: "", cidr: "10.0.0.0/24" }, key: attachmentKey({ containerId: "c1", ifName: "net1" }), podRef: "ns/pod" };

describe("OverlappingRangeIPReservation ⇄ claim", () => {
  it("writes the spec Whereabouts reads, plus containerid and the pool in annotations", () => {
    const object = reservationFor(ref, claim, undefined, { name: "10.0.0.5", namespace: "kube-system", writeId: "w1" });
    expect(object).toMatchObject({
      apiVersion: "whereabouts.cni.cncf.io/v1alpha1",
      kind: "OverlappingRangeIPReservation",
      metadata: { name: "10.0.0.5", namespace: "kube-system" },
      spec: { podref: "ns/pod", ifname: "net1", containerid: "c1" },
    });
    expect(object.metadata?.annotations).toEqual({
      [ANNOTATION.write]: "w1",
      [ANNOTATION.network]: "",
      [ANNOTATION.poolNetwork]: "",
      [ANNOTATION.range]: "10.0.0.0/24",
      [ANNOTATION.address]: "10.0.0.5",
      [ANNOTATION.ifname]: "net1",
    });
    expect(readReservation(ref, object, "x")).toEqual({ kind: "claim", claim });
    // an ORIP CRD from before Whereabouts v0.8 prunes spec.ifname: the annotation keeps the exact key
    const pruned = { ...object, spec: { podref: "ns/pod", containerid: "c1" } };
    expect(readReservation(ref, pruned, "x")).toEqual({ kind: "claim", claim });
  });

  it("keeps unknown fields of the object it writes over", () => {
    const base = {
      metadata: { name: "10.0.0.5", labels: { team: "a" }, resourceVersion: "7" },
      spec: { podref: "x/y", note: "keep" },
      extra: 1,
    };
    const object = reservationFor(ref, claim, base, { name: "10.0.0.5", namespace: "kube-system", writeId: "w2" });
    expect(object.metadata?.labels).toEqual({ team: "a" });
    expect(object.metadata?.resourceVersion).toBe("7");
    expect(object.spec?.note).toBe("keep");
    expect(object.extra).toBe(1);
  });

  it("reports a Whereabouts reservation (no annotations) as legacy, with its podref", () => {
    expect(readReservation(ref, { spec: { podref: "ns/old", ifname: "net1" } }, "x")).toEqual({ kind: "legacy", podRef: "ns/old" });
  });

  it("refuses an object that reserves another network's address under a colliding name", () => {
    const object = reservationFor({ network: "abc", address: "2001::1" }, claim, undefined, {
      name: "abc-2001--1",
      namespace: "n",
      writeId: "w",
    });
    expect(() => readReservation({ network: "", address: "abc:2001::1" }, object, "abc-2001--1")).toThrow(StoreCorruptError);
    expect(() => readReservation({ network: "", address: "abc:2001::1" }, object, "abc-2001--1")).toThrow(/collide/);
  });
});
