import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

// agent-settings is its own entry: the CNI binary's forwarding path reads it without the plugin
export default defineConfig(preset({ entry: ["src/index.ts", "src/agent-settings.ts"], splitting: false }));
