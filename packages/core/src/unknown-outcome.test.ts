import { describe, expect, it } from "vitest";
import { createNodeBlockIpam } from "./block-ipam.js";
import { repairClaim } from "./claim-repair.js";
import { delegatingStore } from "./complete-store.js";
import { StoreUnavailableError } from "./errors.js";
import { formatIp, ipAt, parseCidr } from "./ip.js";
import { createIpam } from "./ipam.js";
import { type AttachmentKey, attachmentKey, formatKey } from "./key.js";
import { createMemoryStore, type MemoryStoreOptions } from "./memory-store.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { Pool } from "./pool.js";
import { parseRange, type Range } from "./range.js";
import type { IpamStore } from "./store.js";

/**
 * Writes of unknown outcome, on the in-memory store in each of its shapes (separate writes like
 * Kubernetes, an atomic commit, entry-level commits like etcd): the chosen write is applied, then
 * answered with StoreUnavailableError `outcomeUnknown` (a reset after the server applied it).
 * Every write of each flow in turn; each call must succeed with what the store recorded, and leave
 * nothing held twice and no claim behind. (On the real kube-apiserver:
 * storage-kubernetes/src/unknown-outcome.test.ts; on a real etcd: storage-etcd's.)
 */

const wide = parseRange({ range: "10.0.0.0/28" });
const narrow = parseRange({ range: "10.0.0.0/29" });
const k1 = attachmentKey({ containerId: "c1", ifName: "eth0" });
const k2 = attachmentKey({ containerId: "c2", ifName: "eth0" });
const fast = { sleep: async () => {} };

const SHAPES: Record<string, MemoryStoreOptions> = {
  "separate writes": {},
  "atomic commit": { transactions: true },
  "entry-level commits": { transactions: true, entryWrites: true },
};

/** `shared`, whose write number `n` (1-based; 0: none) is applied and then reported as of unknown outcome. */
function applyThenFail(shared: IpamStore, n: number): { store: IpamStore; writes: () => number } {
  let writes = 0;
  const unsure =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const result = await fn(...args);
      if (++writes === n) throw new StoreUnavailableError("connection reset after the write", { outcomeUnknown: true });
      return result;
    };
  const overrides: Partial<IpamStore> = {
    writePool: unsure((ref, pool, expected) => shared.writePool(ref, pool, expected)),
    writeClaim: unsure((ref, claim, expected) => shared.writeClaim(ref, claim, expected)),
    deleteClaim: unsure((ref, expected) => shared.deleteClaim(ref, expected)),
  };
  const commit = shared.commit;
  if (commit !== undefined) overrides.commit = unsure((steps) => commit.call(shared, steps));
  return { store: delegatingStore(shared, overrides), writes: () => writes };
}

async function expectConsistent(store: IpamStore): Promise<{ held: Map<string, string> }> {
  const held = new Map<string, string>();
  const keys = new Set<string>();
  const networks = new Set<string>();
  for (const ref of await store.listPools()) {
    networks.add(ref.network);
    for (const r of (await store.readPool(ref))?.pool ?? []) {
      const address = formatIp(ipAt(parseCidr(ref.cidr), r.offset));
      expect(held.has(address), `${address} held twice`).toBe(false);
      expect(keys.has(formatKey(r.key)), `${formatKey(r.key)} holds two addresses`).toBe(false);
      held.set(address, `${ref.cidr} ${formatKey(r.key)}`);
      keys.add(formatKey(r.key));
    }
  }
  for (const network of networks) {
    if (isAffinityNetwork(network)) continue;
    for (const ref of await store.listClaims(network)) {
      const claim = (await store.readClaim(ref))?.claim;
      expect(held.get(ref.address), `claim of ${ref.address}`).toBe(claim && `${claim.pool.cidr} ${formatKey(claim.key)}`);
    }
    for (const address of held.keys()) expect(await store.readClaim({ network, address }), `claim of ${address}`).toBeDefined();
  }
  return { held };
}

type Step = [op: "add" | "del", key: AttachmentKey, range: Range];
const FLOW: Step[] = [
  ["add", k1, wide],
  ["add", k2, narrow],
  ["del", k1, wide],
  ["add", k1, narrow],
  ["del", k2, narrow],
  ["del", k1, narrow],
];

async function run(store: IpamStore, shared: IpamStore, blocks: boolean): Promise<void> {
  const ipam = blocks ? createNodeBlockIpam({ store, node: "n1", blockSize: 4, retry: fast }) : createIpam({ store, retry: fast });
  for (const [op, key, range] of blocks ? FLOW.map(([o, k]): Step => [o, k, wide]) : FLOW) {
    if (op === "add") {
      const [got] = await ipam.allocate({ ranges: [range], key, podRef: "ns/p" });
      const { held } = await expectConsistent(shared);
      const address = got && formatIp(got.address);
      expect(held.get(address ?? "")).toMatch(new RegExp(` ${formatKey(key)}$`));
    } else {
      await ipam.release({ ranges: [range], key });
      const { held } = await expectConsistent(shared);
      expect([...held.values()].filter((h) => h.endsWith(` ${formatKey(key)}`))).toEqual([]);
    }
  }
  const { held } = await expectConsistent(shared);
  expect(held.size).toBe(0);
}

describe("a write of unknown outcome that was applied", () => {
  for (const [shape, options] of Object.entries(SHAPES)) {
    for (const blocks of [false, true]) {
      it(`${shape}${blocks ? ", per-node blocks" : ""}: every write of the flow in turn — each call answers what the store holds, nothing left`, async () => {
        const clean = applyThenFail(createMemoryStore(options), 0);
        await run(clean.store, clean.store, blocks);
        expect(clean.writes()).toBeGreaterThan(FLOW.length - 1);
        for (let n = 1; n <= clean.writes(); n++) {
          const shared = createMemoryStore(options);
          await run(applyThenFail(shared, n).store, shared, blocks).catch((error: unknown) => {
            throw new Error(`write ${n} of ${clean.writes()}: ${(error as Error).message}`, { cause: error });
          });
        }
      });
    }
  }

  it("an all-or-nothing ADD undoes a range whose write landed with an unknown outcome when a later range fails", async () => {
    const shared = createMemoryStore({ transactions: true });
    const { store } = applyThenFail(shared, 1); // the first range's commit (pool and claim)
    const full = parseRange({ range: "10.1.0.0/30", range_start: "10.1.0.1", range_end: "10.1.0.1" });
    await createIpam({ store: shared }).allocate({ ranges: [full], key: k2 });
    await expect(createIpam({ store, retry: fast }).allocate({ ranges: [wide, full], key: k1 })).rejects.toThrow(/no free address/);
    const pool = await shared.readPool({ network: "", cidr: wide.cidr.text });
    expect(pool?.pool.forKey(k1)).toBeUndefined();
    expect(await shared.listClaims("")).toHaveLength(1); // k2's only
  });

  it("a claim repair whose rewrite landed unseen still reports it and fences the pool it names", async () => {
    const shared = createMemoryStore();
    const ref = { network: "", cidr: narrow.cidr.text };
    const before = await shared.writePool(
      ref,
      Pool.empty(narrow.cidr).with({ offset: 1n, key: k1, podRef: "ns/a" }, { moveCursor: false }),
      undefined,
    );
    const address = { network: "", address: "10.0.0.1" };
    await shared.writeClaim(address, { pool: ref, key: k2, podRef: "ns/b" }, undefined);
    const { store } = applyThenFail(shared, 1); // the rewrite
    const named = { pool: ref, key: k1, podRef: "ns/a" };
    expect(await repairClaim(store, address, { retry: fast })).toEqual({ kind: "rewritten", claim: named });
    expect((await shared.readClaim(address))?.claim).toEqual(named);
    // fenced: a release of that entry which read the claim before the rewrite fails its pool write
    expect((await shared.readPool(ref))?.version).not.toBe(before);
  });
});
