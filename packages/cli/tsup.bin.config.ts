import { defineConfig } from "tsup";

/** The `ipamkit` bin: ESM with its shebang, dependencies external, after the library build (no clean). */
export default defineConfig({
  entry: { ipamkit: "src/cli.ts" },
  outDir: "dist/bin",
  format: ["esm"],
  dts: false,
  sourcemap: true,
  clean: false,
  target: "node20",
  platform: "node",
});
