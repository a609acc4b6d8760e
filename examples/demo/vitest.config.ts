import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

// The demo runs the built CNI binary: build it first (the cni-plugin example's build step).
export default defineConfig(
  preset("example-demo", { globalSetup: ["../cni-plugin/test/build.ts"], testTimeout: 60_000, hookTimeout: 120_000 }),
);
