import { describe, expect, it } from "vitest";
import { delegatingStore } from "./delegating-store.js";
import { createMemoryStore } from "./memory-store.js";
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
});
