// Builds dist/ipamkit: one minified CommonJS file with a shebang that runs with plain `node`, even
// copied alone into a CNI bin directory. Every dependency is bundled (ESM builds, so zod/mini tree-
// shakes) except the etcd client (grpc + .proto files at run time), loaded only for datastore "etcd".
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/ipamkit",
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  conditions: ["@ipamkit/source", "import", "module", "node"],
  mainFields: ["module", "main"],
  external: ["etcd3", "cockatiel"],
  banner: { js: "#!/usr/bin/env node" },
  logLevel: "warning",
});
// The Kubernetes store with @kubernetes/client-node (~3 MB minified), loaded only for datastore "kubernetes".
await build({
  entryPoints: ["src/kubernetes.ts"],
  outfile: "dist/ipamkit-kubernetes.cjs",
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  conditions: ["@ipamkit/source", "import", "module", "node"],
  mainFields: ["module", "main"],
  logLevel: "warning",
});
chmodSync("dist/ipamkit", 0o755);
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync("dist/package.json", '{"type":"commonjs"}\n');
