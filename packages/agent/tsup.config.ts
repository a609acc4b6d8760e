import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

export default defineConfig(
  preset({ entry: ["src/index.ts", "src/client.ts", "src/metrics.ts"], external: ["pino", "prom-client"], splitting: false }),
);
