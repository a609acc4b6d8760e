import { attachmentKey, createIpam, type IpamStore, type PodFacts, parseRange } from "@ipamkit/core";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { createEtcdStore } from "@ipamkit/storage-etcd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PodSource } from "../src/ports.js";
import { reconcileOnce } from "../src/reconcile.js";

/**
 * The claim audit on a real etcd: core writes claims there in the pool's own transaction, so a
 * leftover comes only from a non-atomic writer or a crash between two processes' steps — written
 * here straight through the store. Reported by a dry run, repaired by a pass.
 */

const range = parseRange({ range: "10.8.0.0/24" });
const pool = { network: "n", cidr: range.cidr.text };
const key = (id: string) => attachmentKey({ containerId: id, ifName: "net1" });
const anHourAgo = () => new Date(Date.now() - 3_600_000);
const at = (n: number) => ({ network: "n", address: `10.8.0.${n}` });

/** Pods a, b, m: Running, each listing its address on net1. */
function livePods(): PodSource {
  const pod = (name: string, ip: string): PodFacts => ({
    namespace: "ns",
    name,
    uid: `uid-${name}`,
    phase: "Running",
    evictedByTaintManager: false,
    networkStatus: [{ interface: "net1", ips: [ip] }],
  });
  const byRef = new Map([pod("a", "10.8.0.1"), pod("b", "10.8.0.2"), pod("m", "10.8.0.5")].map((p) => [`ns/${p.name}`, p]));
  return { list: async () => new Map(byRef), get: async (ns, name) => byRef.get(`${ns}/${name}`), close() {} };
}

describe("claim audit on etcd", () => {
  let etcd: EtcdInstance;
  let store: IpamStore;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = createEtcdStore({ endpoints: [etcd.endpoint] });
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });

  it("a leftover, a record naming another container and an entry without one: reported by a dry run, repaired by a pass", async () => {
    const old = createIpam({ store, now: anHourAgo });
    const place = (ipam: typeof old, id: string, n: number) =>
      ipam.allocate({ network: "n", ranges: [range], key: key(id), addresses: [`10.8.0.${n}`], podRef: `ns/${id}`, podUid: `uid-${id}` });
    await place(old, "a", 1);
    await place(old, "b", 2);
    const b = await store.readClaim(at(2));
    await store.writeClaim(at(2), { pool, key: key("ghost"), podRef: "ns/ghost" }, b?.version);
    await store.writeClaim(at(3), { pool, key: key("gone"), podRef: "ns/gone" }, undefined);
    await place(createIpam({ store, overlappingRanges: false, now: anHourAgo }), "m", 5);
    const pods = livePods();

    const dry = await reconcileOnce({ store, pods, dryRun: true, claimSettleMs: 0 });
    expect(dry.failed).toEqual([]);
    expect(dry.claims?.repaired.map((f) => [f.ref.address, f.kind])).toEqual([
      ["10.8.0.2", "claim-names-other-entry"],
      ["10.8.0.3", "claim-without-entry"],
      ["10.8.0.5", "entry-without-claim"],
    ]);
    expect((await store.listClaims("n")).map((c) => c.address)).toEqual(["10.8.0.1", "10.8.0.2", "10.8.0.3"]);

    const pass = await reconcileOnce({ store, pods, claimSettleMs: 0 });
    expect(pass.failed).toEqual([]);
    expect(pass.released).toEqual([]);
    expect(pass.claims?.repaired).toHaveLength(3);
    const holders = await Promise.all(
      (await store.listClaims("n")).map(async (ref) => [ref.address, (await store.readClaim(ref))?.claim.key.containerId]),
    );
    expect(holders).toEqual([
      ["10.8.0.1", "a"],
      ["10.8.0.2", "b"],
      ["10.8.0.5", "m"],
    ]);
    expect((await reconcileOnce({ store, pods, claimSettleMs: 0 })).claims).toEqual({ repaired: [], skipped: [], young: 0 });
  });
});
