import { attachmentKey, createIpam, isIpamError, parseRange, poolId } from "@ipamkit/core";
import { Etcd3 } from "etcd3";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createEtcdStore, layout } from "./index.js";

// Found by the corrupted-data campaign (RELIABILITY.md): keys written into a pool by hand must be
// reported as StoreCorruptError naming the pool — by a fresh client and by one that had the pool
// cached (the node-local agent's) — never as a raw URIError, never folded silently into the cache.

const endpoint = inject("etcdEndpoint");
const range = parseRange({ range: "10.61.0.0/24" });
let client: Etcd3;
let n = 0;

beforeAll(() => {
  client = new Etcd3({ hosts: endpoint });
});
afterAll(() => client.close());

/** A fresh prefix holding a pool with a/net1 at offset 1 and b/net1 at offset 2; a client that has it cached. */
async function setup() {
  const prefix = `/corrupt-keys/${process.pid}-${n++}/`;
  const ref = { network: "blue", cidr: range.cidr.text };
  const warm = createEtcdStore({ endpoints: [endpoint], prefix });
  const ipam = createIpam({ store: warm });
  for (const id of ["a", "b"])
    await ipam.allocate({ network: "blue", ranges: [range], key: attachmentKey({ containerId: id, ifName: "net1" }) });
  await warm.readPool(ref);
  return { prefix, ref, warm, pool: layout(prefix).pool(ref) };
}

const row = (offset: string, id: string) => JSON.stringify({ offset, containerId: id, ifName: "net1" });

describe("keys written into a pool by hand", () => {
  for (const [what, key, value] of [
    ["a second key for offset 1 (ip/01)", "ip/01", row("1", "x")],
    ["an unparsable offset (ip/abc)", "ip/abc", row("abc", "x")],
    ["a reservation whose value names another offset", "ip/9", row("1", "x")],
    ["an index key that is not percent-encoded text", "key/%E0%A4%A", "1"],
    ["a second reservation for a/net1 (ip/7)", "ip/7", row("7", "a")],
    ["garbage JSON in the meta key", "meta", '{"cidr":'],
    ["a meta key naming another range", "meta", JSON.stringify({ cidr: "10.99.0.0/24", network: "blue" })],
  ] as const) {
    it(`${what}: StoreCorruptError naming the pool, from a fresh and from a warm client`, async () => {
      const { prefix, ref, warm, pool } = await setup();
      await client.put(`${pool}${key}`).value(value);
      const fresh = createEtcdStore({ endpoints: [endpoint], prefix });
      for (const store of [fresh, warm]) {
        const error = await store.readPool(ref).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isIpamError(error), String(error)).toBe(true);
        expect((error as { code: string }).code).toBe("STORE_CORRUPT");
        expect((error as Error).message).toContain(`pool ${poolId(ref)}`);
      }
      await fresh.close();
      await warm.close();
    });
  }
});

it("a pool whose meta key was deleted by hand is still listed, so a reconciler reads it and reports it", async () => {
  const { prefix, ref, warm, pool } = await setup();
  await client.delete().key(`${pool}meta`);
  const fresh = createEtcdStore({ endpoints: [endpoint], prefix });
  expect(await fresh.listPools()).toEqual([ref]);
  const error = await fresh.readPool(ref).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((error as { code?: string }).code).toBe("STORE_CORRUPT");
  expect((error as Error).message).toContain(`pool ${poolId(ref)}`);
  await fresh.close();
  await warm.close();
});
