import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("kube-apiserver-launcher", { testTimeout: 60_000, hookTimeout: 120_000 }));
