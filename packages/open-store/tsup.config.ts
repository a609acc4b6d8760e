import { defineConfig } from "tsup";
import { preset } from "../../scripts/tsup.preset.js";

export default defineConfig(
  preset({
    entry: ["src/index.ts", "src/modules.ts"],
    external: ["@ipamkit/storage-etcd", "@ipamkit/storage-file", "@ipamkit/storage-kubernetes", "@kubernetes/client-node"],
    splitting: false,
  }),
);
