import { describe, expect, it } from "vitest";
import { holdPort, PORT_ATTEMPTS, startEtcd } from "./index.js";

describe("startEtcd", () => {
  it("starts again on fresh ports when a port it picked was taken before etcd bound it", async () => {
    // the first pick is the taken port (another process bound it after it was found free)
    const taken = await holdPort();
    const picked = taken.picked;
    try {
      const etcd = await startEtcd({ pickPort: taken.pickPort });
      try {
        expect(picked.length).toBe(4); // two ports per attempt, two attempts
        expect(etcd.endpoint).toBe(`http://127.0.0.1:${picked[2]}`);
        expect(etcd.pid).toBeGreaterThan(0);
      } finally {
        await etcd.stop();
      }
    } finally {
      taken.release();
    }
  });

  it(`gives up after ${PORT_ATTEMPTS} attempts, reporting etcd's own error`, async () => {
    const taken = await holdPort();
    let picks = 0;
    const pickPort = async () => {
      picks++;
      return taken.port;
    };
    try {
      await expect(startEtcd({ pickPort })).rejects.toThrow(/address already in use/);
      expect(picks).toBe(2 * PORT_ATTEMPTS);
    } finally {
      taken.release();
    }
  });
});
