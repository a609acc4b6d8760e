import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

// index: the in-process server for tests; cli: the standalone server (`node dist/cli.js --port 0`).
export default defineConfig(preset({ entry: ["src/index.ts", "src/cli.ts"] }));
