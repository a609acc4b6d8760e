import type { ViteUserConfig as UserConfig } from "vitest/config";

/** Resolve sibling @ipamkit/* packages to their TypeScript source, so tests never wait for a build. */
const conditions = ["@ipamkit/source", "module", "node", "development|production"];

export function preset(name: string, extra: NonNullable<UserConfig["test"]> = {}): UserConfig {
  return {
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ["@ipamkit/source"] } },
    test: {
      name,
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      benchmark: { include: ["bench/**/*.bench.ts"] },
      testTimeout: 30_000,
      ...extra,
    },
  };
}
