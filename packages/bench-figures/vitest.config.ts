import { defineConfig } from "vitest/config";
import { preset } from "../../scripts/vitest.preset.js";

export default defineConfig(preset("bench-figures"));
