import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("cli", { testTimeout: 120_000, hookTimeout: 120_000 }));
