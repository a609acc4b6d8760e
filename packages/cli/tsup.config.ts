import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

// The library (src/index.ts). The `ipamkit` bin is built after it by tsup.bin.config.ts, into
// dist/bin/, so that it is neither cleaned away by this build nor taken for an unexported entry.
export default defineConfig(preset());
