import { describe, expect, it } from "vitest";
import { addressFromReservationName, ipPoolName, networkOfPool, normalizeRange, reservationName } from "./names.js";

// Expected names from Whereabouts' pkg/storage/kubernetes/ipam_test.go and the compat reference §6.
describe("Whereabouts object names", () => {
  it.each([
    ["10.0.0.0/8", "", "10.0.0.0-8"],
    ["2001::/116", "", "2001---116"],
    ["10.0.0.0/8", "test", "test-10.0.0.0-8"],
    ["2001:db8::/64", "blue", "blue-2001-db8---64"],
    ["fd00::/8", "", "fd00---8"],
  ])("IPPool for %s in network %j is %s", (cidr, network, name) => {
    expect(ipPoolName({ network, cidr })).toBe(name);
  });

  it.each([
    ["192.168.2.5", "", "192.168.2.5"],
    ["2001::1", "", "2001--1"],
    ["fdef:b041:5422:5::", "", "fdef-b041-5422-5--0"],
    ["10.0.0.5", "mynet", "mynet-10.0.0.5"],
    ["2001:db8:0:0:8000::", "", "2001-db8-0-0-8000--0"],
  ])("OverlappingRangeIPReservation for %s in network %j is %s", (address, network, name) => {
    expect(reservationName({ network, address })).toBe(name);
  });

  it("normalize appends 0 to a trailing ':' before replacing", () => {
    expect(normalizeRange("2001:db8::")).toBe("2001-db8--0");
    expect(normalizeRange("10.0.0.0/8")).toBe("10.0.0.0-8");
  });

  it("finds the network of a pool from its name and spec.range, never from the name alone", () => {
    expect(networkOfPool("10.0.0.0-8", "10.0.0.0/8")).toBe("");
    expect(networkOfPool("test-10.0.0.0-8", "10.0.0.0/8")).toBe("test");
    expect(networkOfPool("a-b-2001-db8---64", "2001:db8::/64")).toBe("a-b");
    expect(networkOfPool("10.0.0.0-16", "10.0.0.0/8")).toBeUndefined();
    expect(networkOfPool("-10.0.0.0-8", "10.0.0.0/8")).toBeUndefined();
  });

  it("reads a candidate address back out of a Whereabouts reservation name, per network", () => {
    expect(addressFromReservationName("192.168.2.5", "")).toBe("192.168.2.5");
    expect(addressFromReservationName("mynet-10.0.0.5", "mynet")).toBe("10.0.0.5");
    expect(addressFromReservationName("mynet-10.0.0.5", "other")).toBeUndefined();
    expect(addressFromReservationName("2001--1", "")).toBe("2001::1");
    expect(addressFromReservationName("fdef-b041-5422-5--0", "")).toBe("fdef:b041:5422:5::0");
    expect(addressFromReservationName("not-an-address", "")).toBeUndefined();
  });
});
