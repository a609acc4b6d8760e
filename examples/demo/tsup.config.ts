import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

export default defineConfig(preset({ entry: ["src/main.ts"], format: ["esm"], dts: false }));
