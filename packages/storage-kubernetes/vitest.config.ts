import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("storage-kubernetes", { testTimeout: 120_000, hookTimeout: 60_000 }));
