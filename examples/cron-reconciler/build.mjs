// Builds dist/main.js: the example's own code and the @ipamkit packages bundled from their sources
// into one ES module; the npm dependencies (Kubernetes and etcd clients, pino, croner) stay external
// and are resolved from node_modules, so run it from this workspace (or install them beside it).
import { rmSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/main.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  conditions: ["@ipamkit/source", "import", "module", "node"],
  packages: "bundle",
  external: ["@kubernetes/client-node", "etcd3", "cockatiel", "pino", "croner", "prom-client"],
  banner: { js: "#!/usr/bin/env node" },
  logLevel: "warning",
});
