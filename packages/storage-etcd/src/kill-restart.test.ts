import { attachmentKey, createIpam, formatIp, type IpamError, parseRange } from "@ipamkit/core";
import { startEtcd } from "@ipamkit/etcd-launcher";
import { describe, expect, it } from "vitest";
import { createEtcdStore } from "./index.js";

const ALLOCATORS = 16;
const EACH = 12;
const range = parseRange({ range: "10.60.0.0/22" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("etcd killed with SIGKILL and restarted while 16 allocators work", () => {
  it("loses no acknowledged allocation, holds no IP twice, answers retryable errors while down", async () => {
    const etcd = await startEtcd();
    try {
      const acknowledged = new Map<string, string>();
      const errorsWhileDown: IpamError[] = [];
      let down = false;
      const workers = Array.from({ length: ALLOCATORS }, async (_, w) => {
        const store = createEtcdStore({ endpoints: [etcd.endpoint], dialTimeoutMs: 500, requestTimeoutMs: 1_000 });
        const ipam = createIpam({ store, retry: { attempts: 1000, deadlineMs: 60_000, baseDelayMs: 1, maxDelayMs: 50 } });
        for (let n = 0; n < EACH; n++) {
          const key = attachmentKey({ containerId: `w${w}-n${n}`, ifName: "eth0" });
          // the caller (kubelet) retries a failed ADD of the same attachment: ADD is idempotent
          for (;;) {
            try {
              const [a] = await ipam.allocate({ ranges: [range], key });
              if (a !== undefined) acknowledged.set(`w${w}-n${n}`, formatIp(a.address));
              break;
            } catch (error) {
              const e = error as IpamError;
              if (!e.retryable) throw error;
              if (down) errorsWhileDown.push(e);
              await sleep(50);
            }
          }
          await sleep(5);
        }
        await store.close();
      });
      await sleep(150);
      await etcd.kill();
      down = true;
      await sleep(1_500);
      down = false;
      await etcd.restart();
      await Promise.all(workers);

      expect(errorsWhileDown.length).toBeGreaterThan(0);
      expect(errorsWhileDown.every((e) => e.code === "STORE_UNAVAILABLE" || e.code === "STORE_CONFLICT")).toBe(true);
      expect(acknowledged.size).toBe(ALLOCATORS * EACH);
      const reader = createEtcdStore({ endpoints: [etcd.endpoint] });
      const pool = (await reader.readPool({ network: "", cidr: range.cidr.text }))?.pool;
      const held = new Map(pool?.reservations().map((r) => [r.key.containerId, r.offset]) ?? []);
      for (const [id] of acknowledged) expect(held.has(id), `acknowledged ${id} lost`).toBe(true);
      const offsets = [...held.values()];
      expect(new Set(offsets).size).toBe(offsets.length);
      expect(new Set(acknowledged.values()).size).toBe(acknowledged.size);
      await reader.close();
    } finally {
      await etcd.stop();
    }
  });
});
