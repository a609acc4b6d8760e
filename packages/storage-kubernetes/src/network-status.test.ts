import { describe, expect, it } from "vitest";
import { LEGACY_NETWORK_STATUS, NETWORK_STATUS, parseNetworkStatus } from "./network-status.js";

describe("parseNetworkStatus", () => {
  it("reads Multus entries, default network included, addresses canonical", () => {
    const text = JSON.stringify([
      { name: "cbr0", interface: "eth0", ips: ["10.244.0.5"], default: true },
      { name: "ns/macvlan", interface: "net1", ips: ["10.1.0.7/24", "FD00:0:0::7"], mac: "aa:bb" },
    ]);
    expect(parseNetworkStatus({ [NETWORK_STATUS]: text })).toEqual([
      { name: "cbr0", interface: "eth0", ips: ["10.244.0.5"], default: true },
      { name: "ns/macvlan", interface: "net1", ips: ["10.1.0.7", "fd00::7"] },
    ]);
  });

  it("reads the pre-1.0 spelling when the current one is absent", () => {
    const text = JSON.stringify([{ interface: "net1", ips: ["10.1.0.7"] }]);
    expect(parseNetworkStatus({ [LEGACY_NETWORK_STATUS]: text })).toEqual([{ interface: "net1", ips: ["10.1.0.7"] }]);
  });

  it("an absent or unreadable annotation is undefined (proves nothing), bad entries and addresses are skipped", () => {
    expect(parseNetworkStatus(undefined)).toBeUndefined();
    expect(parseNetworkStatus({})).toBeUndefined();
    expect(parseNetworkStatus({ [NETWORK_STATUS]: "{not json" })).toBeUndefined();
    expect(parseNetworkStatus({ [NETWORK_STATUS]: '{"interface":"net1"}' })).toBeUndefined();
    expect(parseNetworkStatus({ [NETWORK_STATUS]: '[null, 3, {"interface": 7, "ips": ["x", 5, "10.1.0.1"]}]' })).toEqual([
      { ips: ["10.1.0.1"] },
    ]);
  });
});
