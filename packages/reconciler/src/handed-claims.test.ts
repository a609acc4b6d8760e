import {
  attachmentKey,
  type ClaimRef,
  createIpam,
  createMemoryStore,
  delegatingStore,
  type IpamStore,
  type MemoryStoreOptions,
  type PodFacts,
  parseRange,
} from "@ipamkit/core";
import { describe, expect, it } from "vitest";
import type { PodSource } from "./ports.js";
import { RELIST_MIN, reconcileOnce } from "./reconcile.js";

const range = parseRange({ range: "10.7.0.0/24" });
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const pod = (name: string): PodFacts => ({ namespace: "ns", name, uid: `uid-${name}`, phase: "Running", evictedByTaintManager: false });
const pods = (live: PodFacts[]): PodSource => {
  const byRef = new Map(live.map((p) => [`${p.namespace}/${p.name}`, p]));
  return { list: async () => new Map(byRef), get: async (ns, name) => byRef.get(`${ns}/${name}`), close() {} };
};

/** `dead` pods whose pods are gone and 10 live ones, each with its address's overlapping-range claim; the live pods returned. */
async function seed(store: IpamStore, dead: number): Promise<PodFacts[]> {
  const ipam = createIpam({ store });
  const place = (name: string) =>
    ipam.allocate({ network: "n", ranges: [range], key: key(name), podRef: `ns/${name}`, podUid: `uid-${name}` });
  for (let i = 0; i < dead; i++) await place(`dead-${i}`);
  for (let i = 0; i < 10; i++) await place(`live-${i}`);
  return Array.from({ length: 10 }, (_, i) => pod(`live-${i}`));
}

/** The store, counting its claim reads by kind; `afterScan` runs once a scan has answered. */
function counting(store: IpamStore, afterScan: () => Promise<void> = async () => {}) {
  const calls = { readClaim: 0, readClaims: 0, scanClaims: 0 };
  const overrides: Partial<IpamStore> = {
    readClaim(ref, options) {
      calls.readClaim++;
      return store.readClaim(ref, options);
    },
  };
  // a batch on a store without batched reads is a read each, as the store answers it
  overrides.readClaims = (refs) => {
    if (store.capabilities.batchReads) calls.readClaims++;
    else calls.readClaim += refs.length;
    return store.readClaims(refs);
  };
  overrides.listClaims = (async (networks: string | readonly string[], options?: { contents?: boolean }) => {
    if (options?.contents !== true) return store.listClaims(networks);
    calls.scanClaims++;
    const scanned = await store.listClaims(typeof networks === "string" ? [networks] : networks, { contents: true });
    await afterScan();
    return scanned;
  }) as IpamStore["listClaims"];
  return { counted: delegatingStore(store, overrides), calls };
}

const claimed = async (store: IpamStore) => (await store.listClaims("n")).length;
const holderOf = async (store: IpamStore, ref: ClaimRef) => (await store.readClaim(ref))?.claim.key.containerId;

/**
 * A claim written again after the scan: with separate writes its delete (after the pool write) at
 * the version scanned fails, and the release then repairs it from fresh reads (its pool no longer
 * holds the address: fenced, deleted); with atomic commits the delete is a step of the pool's own
 * transaction, which then fails whole and is planned again from fresh reads. Either way it goes.
 * Each full pass also scans the claims once more for its claim audit (claim-audit.ts), after the
 * releases.
 */
describe.each([
  ["separate writes (like Kubernetes)", { bulkLists: true }],
  ["atomic commits and claim batches", { bulkLists: true, transactions: true, batchReads: true }],
] as [string, MemoryStoreOptions][])("claims scanned for the releases, on a memory store with %s", (_label, storeOptions) => {
  it("a mass release reads its claims in one scan, none one by one, and deletes exactly the released addresses' claims", async () => {
    const store = createMemoryStore(storeOptions);
    const live = await seed(store, 40);
    const { counted, calls } = counting(store);
    const report = await reconcileOnce({ store: counted, pods: pods(live), graceMs: 0 });
    expect(report.released).toHaveLength(40);
    expect(report.failed).toEqual([]);
    expect(calls).toEqual({ readClaim: 0, readClaims: 0, scanClaims: 2 });
    expect(report.claims).toEqual({ repaired: [], skipped: [], young: 0 });
    expect(await claimed(store)).toBe(10);
    for (const c of await store.listClaims("n")) expect(await holderOf(store, c)).toMatch(/^live-/);
  });

  it("a few releases read their claims, no scan", async () => {
    const store = createMemoryStore(storeOptions);
    const live = await seed(store, RELIST_MIN - 1);
    const { counted, calls } = counting(store);
    const report = await reconcileOnce({ store: counted, pods: pods(live), graceMs: 0 });
    expect(report.released).toHaveLength(RELIST_MIN - 1);
    expect(calls.scanClaims).toBe(1); // the claim audit's, after the releases
    expect(calls.readClaim + calls.readClaims).toBeGreaterThan(0);
    expect(await claimed(store)).toBe(10);
  });

  it("a claim written again after the scan is never deleted at the version scanned; its reservation goes", async () => {
    const store = createMemoryStore(storeOptions);
    const live = await seed(store, 40);
    const address = "10.7.0.1"; // dead-0's
    const before = await store.readClaim({ network: "n", address });
    expect(before?.claim.key.containerId).toBe("dead-0");
    // the same content written again: a fresh read would see the holder unchanged and delete it
    const rewrite = async () => {
      await store.writeClaim({ network: "n", address }, (before as NonNullable<typeof before>).claim, before?.version);
    };
    const { counted } = counting(store, rewrite);
    const report = await reconcileOnce({ store: counted, pods: pods(live), graceMs: 0 });
    expect(report.released).toHaveLength(40);
    expect(await claimed(store)).toBe(10);
    expect(await store.readClaim({ network: "n", address })).toBeUndefined();
  });

  it("a scan that fails leaves each release to read its own claims", async () => {
    const store = createMemoryStore(storeOptions);
    const live = await seed(store, 40);
    const failing = delegatingStore(store, {
      listClaims: (async (networks: string | readonly string[], options?: { contents?: boolean }) => {
        if (options?.contents === true) throw new Error("the list timed out");
        return store.listClaims(networks);
      }) as IpamStore["listClaims"],
    });
    const { counted, calls } = counting(failing);
    const report = await reconcileOnce({ store: counted, pods: pods(live), graceMs: 0 });
    expect(report.released).toHaveLength(40);
    // the claim audit cannot read the claims either: reported, nothing else
    expect(report.failed.map((f) => f.subject)).toEqual(["claims"]);
    expect(calls.readClaim + calls.readClaims).toBeGreaterThan(0);
    expect(await claimed(store)).toBe(10);
  });
});
