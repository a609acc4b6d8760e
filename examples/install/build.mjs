// Builds dist/ipamkit-install: the installer (src/install.ts) and pino in one minified CommonJS file
// for Node 20 with a shebang, needing nothing beside it — the image puts it next to the plugin files
// it installs (its default --source is its own directory).
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
await build({
  entryPoints: ["src/install.ts"],
  outfile: "dist/ipamkit-install",
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  conditions: ["@ipamkit/source", "import", "module", "node"],
  banner: { js: "#!/usr/bin/env node" },
  logLevel: "warning",
});
chmodSync("dist/ipamkit-install", 0o755);
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync("dist/package.json", '{"type":"commonjs"}\n');
