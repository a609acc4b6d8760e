import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

export default defineConfig(preset({ external: ["pino"] }));
