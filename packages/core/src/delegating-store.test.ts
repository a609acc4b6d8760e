import { describe, expect, it } from "vitest";
import { readClaimsOf } from "./claims.js";
import { delegatingStore } from "./delegating-store.js";
import { parseCidr } from "./ip.js";
import { attachmentKey } from "./key.js";
import { createMemoryStore } from "./memory-store.js";
import { Pool } from "./pool.js";
import { withPoolRecall } from "./pool-recall.js";

describe("delegatingStore", () => {
  it("offers commit and recallPool exactly when the wrapped store does; overrides win", async () => {
    const plain = delegatingStore(createMemoryStore());
    expect(plain.commit).toBeUndefined();
    expect(plain.recallPool).toBeUndefined();
    const inner = withPoolRecall(createMemoryStore({ atomicCommit: true }));
    const ref = { network: "", cidr: "10.0.0.0/28" };
    const wrapped = delegatingStore(inner, { listPools: async () => [] });
    const [version] = (await wrapped.commit?.([{ kind: "check-pool", ref, expected: undefined }])) ?? ["missing"];
    expect(version).toBe("");
    expect(wrapped.recallPool?.(ref)).toBeUndefined();
    expect(await wrapped.listPools()).toEqual([]);
    expect(wrapped.name).toBe(inner.name);
  });

  it("offers readClaims when the wrapped store does, but not around an override of readClaim", async () => {
    const ref = { network: "n", address: "10.0.0.1" };
    const claim = { pool: { network: "n", cidr: "10.0.0.0/28" }, key: attachmentKey({ containerId: "c1", ifName: "eth0" }) };
    const memory = createMemoryStore();
    await memory.writeClaim(ref, claim, undefined);
    const batched = delegatingStore(memory, { readClaims: (refs) => Promise.all(refs.map((r) => memory.readClaim(r))) });
    expect((await delegatingStore(batched).readClaims?.([ref, { ...ref, address: "10.0.0.2" }]))?.map((c) => c?.claim)).toEqual([
      claim,
      undefined,
    ]);
    const reads: string[] = [];
    const overridden = delegatingStore(batched, {
      readClaim: (r) => {
        reads.push(r.address);
        return batched.readClaim(r);
      },
    });
    expect(overridden.readClaims).toBeUndefined();
    await readClaimsOf(overridden, [ref, { ...ref, address: "10.0.0.2" }]);
    expect(reads.sort()).toEqual(["10.0.0.1", "10.0.0.2"]);
  });

  it("offers scanClaims when the wrapped store does, but not around an override of readClaim", async () => {
    const claim = { pool: { network: "n", cidr: "10.0.0.0/28" }, key: attachmentKey({ containerId: "c1", ifName: "eth0" }) };
    const memory = createMemoryStore({ claimScans: true });
    const version = await memory.writeClaim({ network: "n", address: "10.0.0.1" }, claim, undefined);
    await memory.writeClaim({ network: "m", address: "10.0.0.2" }, claim, undefined);
    expect(delegatingStore(createMemoryStore()).scanClaims).toBeUndefined();
    expect(await delegatingStore(memory).scanClaims?.(["n"])).toEqual([
      { ref: { network: "n", address: "10.0.0.1" }, stored: { claim, version } },
    ]);
    expect(delegatingStore(memory, { readClaim: (r) => memory.readClaim(r) }).scanClaims).toBeUndefined();
  });

  it("offers scanPools when the wrapped store does, but not around an override of readPool", async () => {
    const memory = createMemoryStore({ poolScans: true });
    const ref = { network: "n", cidr: "10.0.0.0/28" };
    const version = await memory.writePool(ref, Pool.empty(parseCidr(ref.cidr)), undefined);
    expect(delegatingStore(createMemoryStore()).scanPools).toBeUndefined();
    expect((await delegatingStore(memory).scanPools?.())?.map((p) => ("stored" in p ? [p.ref, p.stored.version] : p))).toEqual([
      [ref, version],
    ]);
    expect(delegatingStore(memory, { readPool: (r) => memory.readPool(r) }).scanPools).toBeUndefined();
  });
});
