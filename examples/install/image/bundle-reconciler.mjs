// Bundles the reconciler (examples/cron-reconciler/src/main.ts) for the image: one CommonJS file
// with every dependency inside (its own build leaves the npm ones to node_modules, which the image
// does not have), at <out>/reconciler/ipamkit-reconciler.cjs, and etcd3's gRPC schema at
// <out>/proto/ — etcd3 reads `${__dirname}/../proto/rpc.proto` at load time, one level above the
// bundle's folder. Usage: node bundle-reconciler.mjs OUT_DIR
import { cpSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const out = process.argv[2];
if (out === undefined) {
  console.error("usage: node bundle-reconciler.mjs OUT_DIR");
  process.exit(2);
}
const reconciler = resolve(dirname(fileURLToPath(import.meta.url)), "../../cron-reconciler");
mkdirSync(join(out, "reconciler"), { recursive: true });
await build({
  entryPoints: [join(reconciler, "src/main.ts")],
  outfile: join(out, "reconciler", "ipamkit-reconciler.cjs"),
  absWorkingDir: reconciler,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  conditions: ["@ipamkit/source", "import", "module", "node"],
  mainFields: ["module", "main"],
  logLevel: "warning",
});
const etcd3 = dirname(createRequire(join(reconciler, "package.json")).resolve("etcd3/package.json"));
cpSync(join(etcd3, "proto"), join(out, "proto"), { recursive: true });
