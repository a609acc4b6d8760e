import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

// src/cli.ts is the `ipamkit` bin (ESM, with its shebang); src/index.ts the library.
export default defineConfig(preset({ entry: ["src/index.ts", "src/cli.ts"] }));
