import type { Options } from "tsup";

/** The one build preset: ESM + CJS + .d.ts from src/index.ts (plus any extra entries). */
export function preset(extra: Partial<Options> = {}): Options {
  return {
    entry: ["src/index.ts"],
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    clean: true,
    target: "node20",
    platform: "node",
    ...extra,
  };
}
