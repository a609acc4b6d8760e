import { defineConfig } from "tsup";

// One CommonJS file with a shebang: `dist/ipamkit` runs with plain `node` even when copied alone
// into a CNI bin directory (no package.json beside it). Every dependency is bundled; a store's
// code is only evaluated when the config selects it (lazy imports).
export default defineConfig({
  entry: { ipamkit: "src/main.ts" },
  format: ["cjs"],
  platform: "node",
  target: "node20",
  bundle: true,
  // Everything is bundled except the etcd client (grpc + .proto files at run time): it is loaded
  // only for datastore "etcd" and must then be resolvable beside the plugin (see README).
  noExternal: [/^(?!etcd3$|cockatiel$)/],
  external: ["etcd3", "cockatiel"],
  esbuildOptions(options) {
    options.conditions = ["@ipamkit/source", "module", "node"];
  },
  banner: { js: "#!/usr/bin/env node" },
  clean: true,
  dts: false,
  sourcemap: false,
  minify: true,
  // the file CNI runtimes execute is named after the plugin type: no extension
  // dist/package.json keeps the extensionless file CommonJS inside this ESM workspace package;
  // copied alone into a CNI bin directory it is CommonJS by default.
  onSuccess: `mv dist/ipamkit.cjs dist/ipamkit && chmod 755 dist/ipamkit && echo '{"type":"commonjs"}' > dist/package.json`,
});
