// Builds dist/ipamkit-install (the installer, src/install.ts, with pino) and dist/ipamkit-probe (the
// agent's exec probe, src/probe.ts): each one minified CommonJS file for Node 20 with a shebang,
// needing nothing beside it. The image puts the installer next to the plugin files it installs
// (its default --source is its own directory).
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
const bundle = (entry, outfile) =>
  build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: true,
    conditions: ["@ipamkit/source", "import", "module", "node"],
    banner: { js: "#!/usr/bin/env node" },
    logLevel: "warning",
  });
await bundle("src/install.ts", "dist/ipamkit-install");
// the agent container's exec probe: one stats exchange over the agent's socket
await bundle("src/probe.ts", "dist/ipamkit-probe");
chmodSync("dist/ipamkit-install", 0o755);
chmodSync("dist/ipamkit-probe", 0o755);
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync("dist/package.json", '{"type":"commonjs"}\n');
