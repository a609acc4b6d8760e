import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("example-install", { globalSetup: ["./test/build.ts"], testTimeout: 180_000, hookTimeout: 180_000 }));
