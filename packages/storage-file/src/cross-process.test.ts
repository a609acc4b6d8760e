import { attachmentKey, createIpam, formatIp, type IpamStore, ipAt, parseRange } from "@ipamkit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { bundleWorker, runWorkers } from "./fixtures/workers.js";
import { createFileStore } from "./index.js";

const PROCESSES = 8;
const EACH = 25;
const range = parseRange({ range: "10.0.0.0/16" });
const ref = { network: "", cidr: range.cidr.text };

/**
 * Overlapping-range protection: every held address is claimed for this pool. (A claim's key may
 * name an attachment whose pool write lost a race: core treats a claim as live while its *pool*
 * holds the address, so such claims are correct; and a claim left for a released address is
 * dangling and taken over by the next holder. See core's DESIGN.md, "Claims".)
 */
async function expectClaimsCover(store: IpamStore, held: string[]): Promise<void> {
  const claims = await store.listClaims("");
  const claimed = new Set(claims.map((c) => c.address));
  for (const ip of held) {
    expect(claimed.has(ip)).toBe(true);
    expect((await store.readClaim({ network: "", address: ip }))?.claim.pool).toEqual(ref);
  }
  console.info(`[storage-file] ${held.length} held addresses all claimed; ${claims.length - held.length} dangling claims`);
}

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let bundle: string;

beforeAll(async () => {
  tmp = await makeTempDir("ipamkit-xproc-");
  bundle = await bundleWorker(tmp.dir);
});

afterAll(async () => {
  await tmp.remove();
});

describe(`${PROCESSES} OS processes on one store directory`, () => {
  it(`each allocating ${EACH} addresses: every allocation present, all distinct, none lost`, async () => {
    const dir = `${tmp.dir}/alloc`;
    const results = await runWorkers(
      bundle,
      Array.from({ length: PROCESSES }, (_, i) => [dir, String(i), String(EACH)]),
    );
    const conflicts = results.reduce((n, r) => n + r.conflicts, 0);
    console.info(
      `[storage-file] ${PROCESSES} processes × ${EACH} allocations: ${conflicts} conflicts retried (per process: ${results.map((r) => r.conflicts).join(", ")})`,
    );

    const store = createFileStore({ dir });
    const pool = (await store.readPool(ref))?.pool;
    expect(pool?.size).toBe(PROCESSES * EACH);
    const reported = results.flatMap((r) => r.addresses);
    expect(reported).toHaveLength(PROCESSES * EACH);
    expect(new Set(reported.map(([, ip]) => ip)).size).toBe(PROCESSES * EACH);
    const stored = new Map(pool?.reservations().map((r) => [r.key.containerId, formatIp(ipAt(range.cidr, r.offset))]));
    expect(new Set(stored.values()).size).toBe(PROCESSES * EACH);
    for (const [name, ip] of reported) expect(stored.get(name)).toBe(ip);
    await expectClaimsCover(store, [...stored.values()]);
  });

  it("allocate + release cycles at once: the pool ends as it began", async () => {
    const dir = `${tmp.dir}/cycle`;
    const store = createFileStore({ dir });
    const ipam = createIpam({ store });
    for (let i = 0; i < 10; i++) {
      await ipam.allocate({ network: "", ranges: [range], key: attachmentKey({ containerId: `pre-${i}`, ifName: "eth0" }) });
    }
    const before = (await store.readPool(ref))?.pool.reservations();
    const results = await runWorkers(
      bundle,
      Array.from({ length: PROCESSES }, (_, i) => [dir, String(i), String(EACH), "cycle"]),
    );
    const conflicts = results.reduce((n, r) => n + r.conflicts, 0);
    console.info(`[storage-file] ${PROCESSES} processes × ${EACH} allocate+release cycles: ${conflicts} conflicts retried`);
    expect(results.flatMap((r) => r.latencies)).toHaveLength(PROCESSES * EACH);
    expect((await createFileStore({ dir }).readPool(ref))?.pool.reservations()).toEqual(before);
  });

  it("allocating and releasing at once: the pool and the claims hold exactly what remains", async () => {
    const dir = `${tmp.dir}/churn`;
    const results = await runWorkers(
      bundle,
      Array.from({ length: PROCESSES }, (_, i) => [dir, String(i), String(EACH), "churn"]),
    );
    const conflicts = results.reduce((n, r) => n + r.conflicts, 0);
    console.info(
      `[storage-file] ${PROCESSES} processes × ${EACH} allocations + ${Math.ceil(EACH / 2)} releases: ${conflicts} conflicts retried`,
    );
    const released = new Set(results.flatMap((r) => r.released));
    const kept = results.flatMap((r) => r.addresses).filter(([name]) => !released.has(name));
    const store = createFileStore({ dir });
    const pool = (await store.readPool(ref))?.pool;
    expect(
      pool
        ?.reservations()
        .map((r) => r.key.containerId)
        .sort(),
    ).toEqual(kept.map(([name]) => name).sort());
    for (const [name, ip] of kept) {
      const r = pool?.forKey(attachmentKey({ containerId: name, ifName: "eth0" }));
      expect(r && formatIp(ipAt(range.cidr, r.offset))).toBe(ip);
    }
    expect(new Set(kept.map(([, ip]) => ip)).size).toBe(kept.length);
    await expectClaimsCover(
      store,
      kept.map(([, ip]) => ip),
    );
    // And the store is still usable for a new allocation.
    const [next] = await createIpam({ store }).allocate({
      network: "",
      ranges: [range],
      key: attachmentKey({ containerId: "after", ifName: "eth0" }),
    });
    expect(kept.map(([, ip]) => ip)).not.toContain(next && formatIp(next.address));
  });
});
