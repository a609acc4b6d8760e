import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("example-cluster-sim", { testTimeout: 180_000, hookTimeout: 60_000 }));
