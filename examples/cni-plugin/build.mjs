// Builds the plugin as files that run when the dist folder is copied into a CNI bin directory:
// dist/ipamkit (src/forwarder.c, a static program, musl when present, a C compiler required: the one
// place a call's route is decided; it relays calls to the node-local agent and hands every other
// call to ipamkit-node), dist/ipamkit-node (shebang; direct mode, never routes), then minified
// CommonJS that runs with plain `node`: dist/ipamkit-direct.cjs (the whole plugin but the stores'
// clients, every dependency bundled — ESM builds, so zod/mini tree-shakes), dist/ipamkit-etcd.cjs
// (the etcd store, etcd3 and gRPC, its schema inlined, loaded only for datastore "etcd"),
// dist/ipamkit-kubernetes.cjs (the Kubernetes store and @kubernetes/client-node, ~1 MB, loaded
// only for datastore "kubernetes") and dist/ipamkit-agent (the agent, shebang); and V8's code
// cache for each of the two store bundles (<bundle>.v8cache).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
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

/**
 * etcd3 parses its gRPC schema (proto/rpc.proto, beside its lib/) with @grpc/proto-loader's
 * loadSync when it is loaded: ~0.1 s of CPU at every agent start and direct-mode etcd call, and a
 * file the bundle would have to carry. Here the schema is parsed once, at build time, by the same
 * protobuf.js, and the bundle builds the same package definition from it with proto-loader's
 * fromJSON (the build checks that the two definitions are identical). A changed etcd3 whose call
 * no longer reads as below fails the build instead of being bundled unpatched.
 */
const etcdSchemaInline = {
  name: "etcd-schema-inline",
  setup(plugin) {
    const etcd3 = dirname(createRequire(import.meta.url).resolve("etcd3/package.json"));
    const fromEtcd3 = createRequire(join(etcd3, "lib", "index.js"));
    const loader = fromEtcd3("@grpc/proto-loader");
    const protobuf = fromEtcd3("protobufjs");
    const call =
      /\(0, proto_loader_1\.loadSync\)\(`\$\{__dirname\}\/\.\.\/proto\/rpc\.proto`, (\{\s*keepCase: true,\s*longs: String,\s*enums: String,\s*defaults: true,\s*oneofs: true,\s*\})\)/;
    plugin.onLoad({ filter: /etcd3[\\/]lib[\\/]connection-pool\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const found = call.exec(source);
      if (found === null) throw new Error(`build: ${args.path} no longer loads proto/rpc.proto as expected; update etcdSchemaInline`);
      const file = join(etcd3, "proto", "rpc.proto");
      const options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
      const root = new protobuf.Root();
      root.loadSync(file, { keepCase: true });
      const schema = JSON.stringify(root.toJSON());
      const parsed = describe(loader.loadSync(file, options));
      if (parsed !== describe(loader.fromJSON(JSON.parse(schema), options))) {
        throw new Error("build: etcd's gRPC schema from JSON differs from the one parsed from proto/rpc.proto");
      }
      // a replacer function: the schema's text is inserted as it is (a string would expand "$&" and the like)
      const inlined = source.replace(found[0], () => `(0, proto_loader_1.fromJSON)(${schema}, ${found[1]})`);
      return { contents: inlined, loader: "js" };
    });
  },
};

/** A gRPC package definition as comparable text: each name, its descriptor bytes, and each method's path and streaming. */
function describe(definition) {
  return JSON.stringify(
    Object.entries(definition).map(([name, entry]) => [
      name,
      (entry.fileDescriptorProtos ?? []).map((bytes) => Buffer.from(bytes).toString("base64")),
      entry.format === undefined
        ? Object.entries(entry).map(([method, m]) => [method, m.path, m.requestStream, m.responseStream, m.requestType?.type?.name])
        : [entry.format, JSON.stringify(entry.type)],
    ]),
  );
}

/**
 * src/forwarder-generated.h: what the C binary must know of the TypeScript side, taken from its
 * sources at build time (never copied by hand): the supported CNI versions (VERSION is answered by
 * the binary), the flat file's locations, name, size bound and node override variable, the JSON
 * nesting bound and the agent timeout's bounds (routing, src/forwarder-route.h). Git-ignored,
 * written at every build; the fuzz target and the differential test's reader include it too.
 */
async function generatedHeader() {
  const cni = join(import.meta.dirname, "..", "..", "packages", "cni", "src");
  const out = await build({
    stdin: {
      contents: [
        `export { SUPPORTED_VERSIONS } from "./types.ts";`,
        `export { DEFAULT_FLAT_FILE_PATHS, FLAT_FILE_NAME, FLAT_FILE_MAX_BYTES, NODE_CONFIGURATION_PATH_ENV } from "./config-paths.ts";`,
        `export { AGENT_TIMEOUT_DEFAULT_SECONDS, AGENT_TIMEOUT_MAX_SECONDS, ROUTE_JSON_MAX_NESTING, AGENT_SOCKET_MAX_BYTES } from "./agent-settings.ts";`,
      ].join("\n"),
      resolveDir: cni,
      loader: "ts",
    },
    bundle: true,
    platform: "node",
    format: "cjs",
    write: false,
    logLevel: "warning",
  });
  const module = { exports: {} };
  new Function("module", "exports", out.outputFiles[0].text)(module, module.exports);
  const t = module.exports;
  const c = (text) => JSON.stringify(text); // a C string literal for ASCII text
  const list = (items) => items.map(c).join(",");
  const number = (value) => {
    if (!Number.isFinite(Number(value))) throw new Error(`build: ${value} is not a number`);
    return Number(value);
  };
  return [
    "// Generated by build.mjs from packages/cni/src (types.ts, config-paths.ts, agent-settings.ts). Do not edit.",
    "#ifndef IPAMKIT_FORWARDER_GENERATED_H",
    "#define IPAMKIT_FORWARDER_GENERATED_H",
    `#define IPAMKIT_VERSIONS_JSON ${c(list(t.SUPPORTED_VERSIONS))}`,
    `#define IPAMKIT_DEFAULT_VERSION ${c(t.SUPPORTED_VERSIONS.at(-1))}`,
    `#define IPAMKIT_FLAT_FILE_PATHS ${list(t.DEFAULT_FLAT_FILE_PATHS)}`,
    `#define IPAMKIT_FLAT_FILE_NAME ${c(t.FLAT_FILE_NAME)}`,
    `#define IPAMKIT_FLAT_FILE_MAX_BYTES ${number(t.FLAT_FILE_MAX_BYTES)}`,
    `#define IPAMKIT_CONFIGURATION_PATH_ENV ${c(t.NODE_CONFIGURATION_PATH_ENV)}`,
    `#define IPAMKIT_JSON_MAX_NESTING ${number(t.ROUTE_JSON_MAX_NESTING)}`,
    `#define IPAMKIT_AGENT_SOCKET_MAX_BYTES ${number(t.AGENT_SOCKET_MAX_BYTES)}`,
    `#define IPAMKIT_AGENT_TIMEOUT_DEFAULT ${number(t.AGENT_TIMEOUT_DEFAULT_SECONDS)}`,
    `#define IPAMKIT_AGENT_TIMEOUT_MAX ${number(t.AGENT_TIMEOUT_MAX_SECONDS)}`,
    "#endif",
    "",
  ].join("\n");
}

/** Writes `text` to `path` (replaced whole, and only when it changed: a concurrent build never sees half a file). */
function writeIfChanged(path, text) {
  let current;
  try {
    current = readFileSync(path, "utf8");
  } catch {
    current = undefined;
  }
  if (current === text) return;
  writeFileSync(`${path}.${process.pid}`, text);
  renameSync(`${path}.${process.pid}`, path);
}

/**
 * src/forwarder-codes.h: the CNI codes and the forwarder's own error messages (src/forwarder-errors.ts,
 * from @ipamkit/cni's CNI_CODES). Git-ignored: written at every build (replaced whole, and only when
 * it changed), checked by src/forwarder-codes.test.ts.
 */
async function writeCodesHeader() {
  const out = await build({
    entryPoints: ["src/forwarder-errors.ts"],
    bundle: true,
    platform: "node",
    format: "cjs",
    conditions: ["@ipamkit/source", "import", "module", "node"],
    write: false,
    logLevel: "warning",
  });
  const module = { exports: {} };
  new Function("module", "exports", "require", out.outputFiles[0].text)(module, module.exports, createRequire(import.meta.url));
  writeIfChanged("src/forwarder-codes.h", module.exports.forwarderCodesHeader());
}

// built beside dist/ and swapped in whole at the end: a concurrent build (another test run in the
// same tree) never sees, nor leaves, a half-written dist/
const out = `dist.build-${process.pid}`;
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
// dist/ipamkit-node is only direct mode's entry (~3 KB); the plugin itself is dist/ipamkit-direct.cjs
await bundle({ entryPoints: ["src/main.ts"], outfile: `${out}/ipamkit-node`, banner: { js: "#!/usr/bin/env node" } });
await bundle({ entryPoints: ["src/direct.ts"], outfile: `${out}/ipamkit-direct.cjs` });
await bundle({ entryPoints: ["src/kubernetes.ts"], outfile: `${out}/ipamkit-kubernetes.cjs` });
await bundle({ entryPoints: ["src/etcd.ts"], outfile: `${out}/ipamkit-etcd.cjs`, plugins: [etcdSchemaInline] });
// the node-local agent: same store loading (the etcd and Kubernetes bundles above), plus pino
await bundle({
  entryPoints: ["src/agent.ts"],
  outfile: `${out}/ipamkit-agent`,
  banner: { js: "#!/usr/bin/env node" },
});
chmodSync(`${out}/ipamkit-node`, 0o755);
chmodSync(`${out}/ipamkit-agent`, 0o755);
// static: the file is copied onto hosts whose C library is not the build image's. musl (Debian's
// musl-tools) when present: a static musl program starts with ~12 page faults where static glibc
// takes ~35, half the CPU of every call on a VM (BENCHMARKS.md, "The CNI process"); CC overrides.
await writeCodesHeader();
writeIfChanged("src/forwarder-generated.h", await generatedHeader());
const hasMusl = spawnSync("sh", ["-c", "command -v musl-gcc"]).status === 0;
const cc = process.env.CC ?? (hasMusl ? "musl-gcc" : "cc");
if (process.env.CC === undefined && !hasMusl) console.warn("build: no musl-gcc (musl-tools); dist/ipamkit is linked with glibc");
const compiled = spawnSync(cc, ["-O2", "-Wall", "-Wextra", "-Werror", "-static", "-s", "-o", `${out}/ipamkit`, "src/forwarder.c"], {
  stdio: "inherit",
});
if (compiled.error?.code === "ENOENT") {
  // dist/ipamkit is where a call's route is decided (agent or direct mode), and only there
  throw new Error(`build: no C compiler (${cc}): dist/ipamkit is a C program; install gcc (apt-get install gcc musl-tools)`);
} else if (compiled.status !== 0) {
  throw new Error(`build: ${cc} failed on src/forwarder.c`);
}
// keeps the extensionless file CommonJS inside this ESM workspace package
writeFileSync(`${out}/package.json`, '{"type":"commonjs"}\n');
// V8's code cache for the store bundles (src/bundle-loader.ts), made by this Node with no V8 flags
// — a Node that differs rejects it and compiles from source
await bundle({ entryPoints: ["src/write-code-cache.ts"], outfile: `${out}/.write-code-cache.cjs` });
const cached = spawnSync(process.execPath, [`${out}/.write-code-cache.cjs`, `${out}/ipamkit-kubernetes.cjs`, `${out}/ipamkit-etcd.cjs`], {
  stdio: "inherit",
  env: { ...process.env, NODE_OPTIONS: "" },
});
rmSync(`${out}/.write-code-cache.cjs`);
if (cached.status !== 0) throw new Error("build: writing the code caches of dist/ipamkit-kubernetes.cjs and dist/ipamkit-etcd.cjs failed");
const old = `dist.old-${process.pid}`;
for (let attempt = 1; ; attempt++) {
  try {
    renameSync("dist", old);
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
  }
  try {
    renameSync(out, "dist");
    break;
  } catch (error) {
    // another build put its dist/ in place in between: move that one aside too
    if ((error.code !== "ENOTEMPTY" && error.code !== "EEXIST") || attempt === 5) throw error;
  }
  rmSync(old, { recursive: true, force: true });
}
rmSync(old, { recursive: true, force: true });
