import {
  type AttachmentKey,
  attachmentKey,
  createIpam,
  createNodeBlockIpam,
  formatIp,
  formatKey,
  type IpamStore,
  ipAt,
  parseCidr,
  parseRange,
  type Range,
  type RetryOptions,
} from "@ipamkit/core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GrpcResetProxy, startGrpcResetProxy } from "../test/grpc-reset-proxy.js";
import { createEtcdStore } from "./index.js";

/**
 * A write transaction whose answer never arrives: etcd applied it, then the client's connection
 * was reset (a TCP RST from an HTTP/2 proxy in front of the real etcd, after etcd answered). The
 * store sees gRPC UNAVAILABLE: whether the transaction was applied is unknown to it. Core finds
 * out by reading again — each ADD and DEL succeeds with what etcd recorded, nothing is held twice,
 * no claim is left. Each write transaction of each flow is reset in turn.
 */

const RETRY: RetryOptions = { attempts: 100_000, deadlineMs: 30_000, baseDelayMs: 2, maxDelayMs: 200 };
const wide = parseRange({ range: "10.61.0.0/28" });
const narrow = parseRange({ range: "10.61.0.0/29" });
const k1 = attachmentKey({ containerId: "c1", ifName: "eth0" });
const k2 = attachmentKey({ containerId: "c2", ifName: "eth0" });

type Step = [op: "add" | "del", key: AttachmentKey, range: Range];
const FLOWS: Record<"ranges" | "node blocks", Step[]> = {
  ranges: [
    ["add", k1, wide],
    ["add", k2, narrow],
    ["del", k1, wide],
    ["add", k1, narrow],
    ["del", k2, narrow],
    ["del", k1, narrow],
  ],
  "node blocks": [
    ["add", k1, wide],
    ["add", k2, wide],
    ["del", k1, wide],
    ["del", k2, wide],
  ],
};

/** Every held address (→ "pool key"), checked: none twice, no key twice, every claim naming its holder, every holder claimed. */
async function consistent(store: IpamStore): Promise<Map<string, string>> {
  const held = new Map<string, string>();
  const keys = new Set<string>();
  for (const ref of await store.listPools()) {
    for (const r of (await store.readPool(ref))?.pool ?? []) {
      const address = formatIp(ipAt(parseCidr(ref.cidr), r.offset));
      expect(held.has(address), `${address} held twice`).toBe(false);
      expect(keys.has(formatKey(r.key)), `${formatKey(r.key)} holds two addresses`).toBe(false);
      held.set(address, `${ref.cidr} ${formatKey(r.key)}`);
      keys.add(formatKey(r.key));
    }
  }
  const claims = await store.listClaims("");
  for (const ref of claims) {
    const claim = (await store.readClaim(ref))?.claim;
    expect(held.get(ref.address), `claim of ${ref.address}`).toBe(claim && `${claim.pool.cidr} ${formatKey(claim.key)}`);
  }
  expect(claims.map((c) => c.address).sort()).toEqual([...held.keys()].sort());
  return held;
}

describe("etcd: writes of unknown outcome (the connection reset after etcd applied the transaction)", () => {
  let proxy: GrpcResetProxy;
  let seq = 0;
  beforeAll(async () => {
    proxy = await startGrpcResetProxy(inject("etcdEndpoint"));
  });
  afterAll(async () => {
    await proxy?.close();
  });

  /** Runs a flow in a fresh prefix through the proxy; returns the unknown outcomes core met. */
  async function run(flavour: keyof typeof FLOWS): Promise<number> {
    const prefix = `/ipamkit-unknown-${process.pid}-${seq++}/`;
    const through = createEtcdStore({ endpoints: [proxy.endpoint], prefix, requestTimeoutMs: 5_000 });
    const direct = createEtcdStore({ endpoints: [inject("etcdEndpoint")], prefix });
    const ipam =
      flavour === "ranges"
        ? createIpam({ store: through, retry: { ...RETRY } })
        : createNodeBlockIpam({ store: through, retry: { ...RETRY }, node: "node-a", blockSize: 4 });
    try {
      for (const [op, key, range] of FLOWS[flavour]) {
        if (op === "add") {
          const [got] = await ipam.allocate({ ranges: [range], key, podRef: "ns/pod" });
          const held = await consistent(direct);
          expect(held.get(got ? formatIp(got.address) : "")).toMatch(new RegExp(` ${formatKey(key)}$`));
        } else {
          await ipam.release({ ranges: [range], key });
          const held = await consistent(direct);
          expect([...held.values()].filter((h) => h.endsWith(` ${formatKey(key)}`))).toEqual([]);
        }
      }
      expect((await consistent(direct)).size).toBe(0);
      // a node's block claims stay (never deleted): one per block it took, no more
      const affinity = await direct.listClaims("node-blocks");
      expect(affinity.length).toBe(flavour === "node blocks" ? 1 : 0);
      return ipam.conflicts.unknownOutcomes ?? 0;
    } finally {
      await through.close();
      await direct.close();
    }
  }

  for (const flavour of ["ranges", "node blocks"] as const) {
    it(`${flavour}: every write transaction of ADD and DEL reset after etcd applied it, in turn — each call succeeds, nothing twice, nothing left`, async () => {
      proxy.resetWrite = undefined;
      const before = proxy.writes;
      expect(await run(flavour)).toBe(0);
      const writes = proxy.writes - before;
      expect(writes).toBeGreaterThanOrEqual(FLOWS[flavour].length);
      const swallowedBefore = proxy.swallowed.length;
      for (let n = 1; n <= writes; n++) {
        proxy.resetWrite = proxy.writes + n;
        await expect(run(flavour), `reset of write ${n} of ${writes}`).resolves.toBeGreaterThanOrEqual(1);
        expect(proxy.swallowed.length, `write ${n} reset`).toBe(swallowedBefore + n);
      }
      // etcd answered every swallowed transaction (grpc-status 0): applied, or refused by its compares
      expect(proxy.swallowed.slice(swallowedBefore)).toEqual(Array.from({ length: writes }, () => "0"));
    }, 300_000);
  }
});
