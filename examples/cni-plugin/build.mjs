// Builds the plugin as minified CommonJS files that run with plain `node` when the dist folder is
// copied into a CNI bin directory: dist/ipamkit (shebang; the small forwarder to the node-local
// agent), dist/ipamkit-direct.cjs (the whole plugin, every dependency bundled — ESM builds, so
// zod/mini tree-shakes — except the etcd client: grpc + .proto files at run time, loaded only for
// datastore "etcd"), dist/ipamkit-kubernetes.cjs (the Kubernetes store and @kubernetes/client-node,
// ~1 MB, loaded only for datastore "kubernetes") and dist/ipamkit-agent (the agent, shebang).
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

/** One minified CommonJS bundle for Node 20, resolving sibling packages to their sources. */
const bundle = (options) =>
  build({
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: true,
    conditions: ["@ipamkit/source", "import", "module", "node"],
    mainFields: ["module", "main"],
    logLevel: "warning",
    ...options,
  });

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
// dist/ipamkit is only the forwarder (~10 KB); the plugin itself is dist/ipamkit-direct.cjs
await bundle({ entryPoints: ["src/main.ts"], outfile: "dist/ipamkit", banner: { js: "#!/usr/bin/env node" } });
await bundle({ entryPoints: ["src/direct.ts"], outfile: "dist/ipamkit-direct.cjs", external: ["etcd3", "cockatiel"] });
await bundle({ entryPoints: ["src/kubernetes.ts"], outfile: "dist/ipamkit-kubernetes.cjs" });
// the node-local agent: same store loading (etcd3 beside it, the Kubernetes bundle above), plus pino
await bundle({
  entryPoints: ["src/agent.ts"],
  outfile: "dist/ipamkit-agent",
  external: ["etcd3", "cockatiel"],
  banner: { js: "#!/usr/bin/env node" },
});
chmodSync("dist/ipamkit", 0o755);
chmodSync("dist/ipamkit-agent", 0o755);
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync("dist/package.json", '{"type":"commonjs"}\n');
