import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

// one real node at a time on the machine: the files run one after another
export default defineConfig(
  preset("node-launcher", { globalSetup: ["./test/image-setup.ts"], testTimeout: 120_000, hookTimeout: 240_000, fileParallelism: false }),
);
