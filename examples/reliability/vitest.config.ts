import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(
  preset("example-reliability", { globalSetup: ["./test/build.ts"], testTimeout: 120_000, hookTimeout: 120_000 }),
);
