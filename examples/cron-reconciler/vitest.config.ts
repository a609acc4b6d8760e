import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(
  preset("example-cron-reconciler", { globalSetup: ["./test/build.ts"], testTimeout: 60_000, hookTimeout: 60_000 }),
);
