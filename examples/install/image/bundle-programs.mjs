// Bundles the image's Node programs besides the plugin's: the reconciler
// (examples/cron-reconciler/src/main.ts → <out>/reconciler/ipamkit-reconciler.cjs) and the CLI
// (packages/cli/src/cli.ts → <out>/cli/ipamkit-cli.cjs). Each is one CommonJS file with every
// dependency inside (their own builds leave npm packages to node_modules, which the image does not
// have). etcd3's gRPC schema goes to <out>/proto/: etcd3 reads `${__dirname}/../proto/rpc.proto`
// at load time, one level above each bundle's folder. Usage: node bundle-programs.mjs OUT_DIR
import { cpSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const out = process.argv[2];
if (out === undefined) {
  console.error("usage: node bundle-programs.mjs OUT_DIR");
  process.exit(2);
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const programs = [
  { dir: join(root, "examples/cron-reconciler"), entry: "src/main.ts", outfile: join(out, "reconciler", "ipamkit-reconciler.cjs") },
  { dir: join(root, "packages/cli"), entry: "src/cli.ts", outfile: join(out, "cli", "ipamkit-cli.cjs") },
];
for (const program of programs) {
  mkdirSync(dirname(program.outfile), { recursive: true });
  await build({
    entryPoints: [join(program.dir, program.entry)],
    outfile: program.outfile,
    absWorkingDir: program.dir,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: true,
    conditions: ["@ipamkit/source", "import", "module", "node"],
    mainFields: ["module", "main"],
    logLevel: "warning",
  });
}
const etcd3 = dirname(createRequire(join(root, "examples/cron-reconciler/package.json")).resolve("etcd3/package.json"));
cpSync(join(etcd3, "proto"), join(out, "proto"), { recursive: true });
