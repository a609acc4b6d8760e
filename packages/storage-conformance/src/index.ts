import type { IpamStore } from "@ipamkit/core";
import { afterEach, beforeEach, describe } from "vitest";
import { registerAllocationCases } from "./allocation-cases.js";
import { registerBlockCases } from "./block-cases.js";
import { registerCasCases, registerCommitCases, registerEntryCases, registerPoolScanCases } from "./cas-cases.js";
import { registerScanCases } from "./claim-cases.js";
import { registerConcurrencyCases } from "./concurrency-cases.js";
import { registerLegacyCases } from "./legacy-cases.js";
import { registerModelCases } from "./model-cases.js";
import type { ConformanceOptions } from "./options.js";
import { registerOverlapCases } from "./overlap-cases.js";
import { registerNoSliceCases, registerSliceCases } from "./slice-cases.js";
import { registerStickyCases } from "./sticky-cases.js";

export type { ConformanceOptions } from "./options.js";

/**
 * Registers the storage conformance suite for one store. A store's test file is a few lines:
 *
 * ```ts
 * describeStoreConformance({ name: "file", create: () => createFileStore({ dir: tmp() }) });
 * ```
 */
export function describeStoreConformance(options: ConformanceOptions): void {
  describe(`store conformance: ${options.name}`, () => {
    let current: IpamStore | undefined;
    const ctx = {
      options,
      store: () => {
        if (current === undefined) throw new Error("no store: the suite creates one per test");
        return current;
      },
    };
    beforeEach(async () => {
      current = await options.create();
    });
    afterEach(async () => {
      await current?.close();
      current = undefined;
      await options.cleanup?.();
    });
    describe("compare-and-swap, order, claims, corruption", () => registerCasCases(ctx));
    if (options.capabilities?.transactions === true) describe("atomic commit", () => registerCommitCases(ctx));
    if (options.capabilities?.entryWrites === true) describe("entry-level commit steps", () => registerEntryCases(ctx));
    describe("claims listed with contents", () => registerScanCases(ctx));
    describe("pools listed with contents", () => registerPoolScanCases(ctx));
    describe("allocation and exact-key release", () => registerAllocationCases(ctx));
    describe("legacy Whereabouts entries (no ifname)", () => registerLegacyCases(ctx));
    describe("overlapping ranges", () => registerOverlapCases(ctx));
    describe("concurrency", () => registerConcurrencyCases(ctx));
    describe("per-node blocks", () => registerBlockCases(ctx));
    if (options.capabilities?.nodePools === true) describe("node-slice pools", () => registerSliceCases(ctx));
    else describe("node-slice pools refused", () => registerNoSliceCases(ctx));
    describe("sticky addresses", () => registerStickyCases(ctx));
    describe("model-based random operations", () => registerModelCases(ctx));
    if (options.extra !== undefined) describe("backend-specific", () => options.extra?.(ctx.store));
  });
}
