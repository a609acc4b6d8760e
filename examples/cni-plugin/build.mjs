// Builds the plugin as files that run when the dist folder is copied into a CNI bin directory:
// dist/ipamkit (src/forwarder.c, a static program, musl when present: relays calls to the node-local agent, hands
// every other call to ipamkit-node), dist/ipamkit-node (shebang; the Node forwarder), then minified
// CommonJS that runs with plain `node`: dist/ipamkit-direct.cjs (the whole plugin, every dependency
// bundled — ESM builds, so zod/mini tree-shakes — except the etcd client: grpc + .proto files at
// run time, loaded only for datastore "etcd"), dist/ipamkit-kubernetes.cjs (the Kubernetes store
// and @kubernetes/client-node, ~1 MB, loaded only for datastore "kubernetes") and
// dist/ipamkit-agent (the agent, shebang); dist/ipamkit-kubernetes.cjs.v8cache (V8's code cache for it).
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
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
// dist/ipamkit-node is only the Node forwarder (~4 KB); the plugin itself is dist/ipamkit-direct.cjs
await bundle({ entryPoints: ["src/main.ts"], outfile: "dist/ipamkit-node", banner: { js: "#!/usr/bin/env node" } });
await bundle({ entryPoints: ["src/direct.ts"], outfile: "dist/ipamkit-direct.cjs", external: ["etcd3", "cockatiel"] });
await bundle({ entryPoints: ["src/kubernetes.ts"], outfile: "dist/ipamkit-kubernetes.cjs" });
// the node-local agent: same store loading (etcd3 beside it, the Kubernetes bundle above), plus pino
await bundle({
  entryPoints: ["src/agent.ts"],
  outfile: "dist/ipamkit-agent",
  external: ["etcd3", "cockatiel"],
  banner: { js: "#!/usr/bin/env node" },
});
chmodSync("dist/ipamkit-node", 0o755);
chmodSync("dist/ipamkit-agent", 0o755);
// static: the file is copied onto hosts whose C library is not the build image's. musl (Debian's
// musl-tools) when present: a static musl program starts with ~12 page faults where static glibc
// takes ~35, half the CPU of every call on a VM (BENCHMARKS.md, "The CNI process"); CC overrides.
const hasMusl = spawnSync("sh", ["-c", "command -v musl-gcc"]).status === 0;
const cc = process.env.CC ?? (hasMusl ? "musl-gcc" : "cc");
if (process.env.CC === undefined && !hasMusl) console.warn("build: no musl-gcc (musl-tools); dist/ipamkit is linked with glibc");
const compiled = spawnSync(cc, ["-O2", "-Wall", "-Wextra", "-Werror", "-static", "-s", "-o", "dist/ipamkit", "src/forwarder.c"], {
  stdio: "inherit",
});
if (compiled.error?.code === "ENOENT") {
  // without a C compiler the Node forwarder is the binary: every call works, each costs a Node start
  console.warn(`build: no C compiler (${cc}); dist/ipamkit is the Node forwarder — install gcc for the native one`);
  copyFileSync("dist/ipamkit-node", "dist/ipamkit");
  chmodSync("dist/ipamkit", 0o755);
} else if (compiled.status !== 0) {
  throw new Error(`build: ${cc} failed on src/forwarder.c`);
}
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync("dist/package.json", '{"type":"commonjs"}\n');
// V8's code cache for the Kubernetes bundle (src/bundle-loader.ts), made by this Node with no V8 flags
// — a Node that differs rejects it and compiles from source
await bundle({ entryPoints: ["src/write-code-cache.ts"], outfile: "dist/.write-code-cache.cjs" });
const cached = spawnSync(process.execPath, ["dist/.write-code-cache.cjs", "dist/ipamkit-kubernetes.cjs"], {
  stdio: "inherit",
  env: { ...process.env, NODE_OPTIONS: "" },
});
rmSync("dist/.write-code-cache.cjs");
if (cached.status !== 0) throw new Error("build: writing the code cache of dist/ipamkit-kubernetes.cjs failed");
