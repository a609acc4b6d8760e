import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("agent", { testTimeout: 120_000, hookTimeout: 60_000 }));
