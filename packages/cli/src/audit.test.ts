import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createIpam } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { describe, expect, it } from "vitest";
import { audit } from "./audit.js";
import { key, NARROW, NET, plantDuplicate, seedClean } from "./test-support.js";

describe("audit's second read (--settle)", () => {
  it("reports only what is still there when read again: a double hold fixed meanwhile is not reported", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ipamkit-cli-settle-"));
    const store = createFileStore({ dir });
    try {
      await seedClean(store);
      await plantDuplicate(store);
      const options = { store, spec: { datastore: "file" as const, dataDir: dir }, claims: true, graceMs: 0, now: () => new Date() };
      const stays = await audit({ ...options, settleMs: 1, progress: () => {} });
      expect(stays.findings.map((f) => f.kind)).toContain("held-twice");
      // between the two reads, the planted holder is released (an operator, or a DEL in flight)
      let slept = 0;
      const fixed = await audit({
        ...options,
        settleMs: 2_000,
        progress: () => {},
        sleep: async (ms) => {
          slept = ms;
          await createIpam({ store }).release({ network: NET, ranges: [NARROW], key: key("ctr-x") });
        },
      });
      expect(slept).toBe(2_000);
      expect(fixed.findings).toEqual([]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
