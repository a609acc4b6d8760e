import { describe, expect, it } from "vitest";
import { faultCost, ringHop } from "./switch-cost.js";

describe("process-switch (the machine's cost of processes taking turns)", () => {
  it("runs a ring and gives positive per-hop CPU and wall times", () => {
    const hop = ringHop({ processes: 3, kb: 64, hops: 3000 });
    expect(hop.user + hop.system).toBeGreaterThan(0);
    expect(hop.wall).toBeGreaterThan(0);
  });

  it("counts a fault for every page handed back and touched again", () => {
    const cost = faultCost({ kb: 64, rounds: 50 });
    // 16 pages of 4 KiB, faulted in afresh in each of the 50 rounds
    expect(cost.faults).toBeGreaterThanOrEqual(16 * 50);
    expect(cost.micros).toBeGreaterThan(0);
  });

  it("refuses a ring with no process", () => {
    expect(() => ringHop({ processes: 0, kb: 0, hops: 10 })).toThrow(/usage: process-switch/);
  });
});
