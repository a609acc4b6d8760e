import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSync } from "esbuild";
import { afterEach, beforeEach, expect, it } from "vitest";
import { requireBundle } from "./bundle-loader.js";

// dist/ is built by the test run's global setup (test/build.ts), code cache included
const DIST = join(import.meta.dirname, "..", "dist");
const BUNDLE = "ipamkit-kubernetes.cjs";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-bundle-"));
  copyFileSync(join(DIST, BUNDLE), join(dir, BUNDLE));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const bundle = () => join(dir, BUNDLE);
const storeFactory = (exports: unknown) => typeof (exports as { createKubernetesStore?: unknown }).createKubernetesStore;

it.each([
  ["ipamkit-kubernetes.cjs", "createKubernetesStore"],
  ["ipamkit-etcd.cjs", "createEtcdStore"],
])("the build's cache of %s is accepted by the Node that runs the agent (plain node, no flags)", (name, factory) => {
  // a child process as the agent runs: the test runner's own process may carry other V8 flags
  const loader = join(dir, "loader.cjs");
  buildSync({
    entryPoints: [join(import.meta.dirname, "bundle-loader.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: loader,
    logLevel: "warning",
  });
  const driver = `const { requireBundle } = require(${JSON.stringify(loader)});
    const r = requireBundle(${JSON.stringify(join(DIST, name))});
    process.stdout.write(JSON.stringify({ cache: r.cache, factory: typeof r.exports[${JSON.stringify(factory)}] }));`;
  const answer = execFileSync(process.execPath, ["-e", driver], { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } });
  expect(JSON.parse(answer)).toEqual({ cache: "accepted", factory: "function" });
});

it("without a cache file the bundle compiles from source, and is loaded once per process", () => {
  const first = requireBundle(bundle());
  expect(first.cache).toBe("absent");
  expect(storeFactory(first.exports)).toBe("function");
  expect(requireBundle(bundle()).exports).toBe(first.exports);
});

it("a cache made from another bundle is not used, even when V8 would take it (same length)", () => {
  copyFileSync(join(DIST, `${BUNDLE}.v8cache`), join(dir, `${BUNDLE}.v8cache`));
  // other quotes, same length: V8's own check (its version, flags, the source's length) would pass
  const source = readFileSync(bundle(), "utf8");
  expect(source.startsWith('"use strict";')).toBe(true);
  writeFileSync(bundle(), `'use strict';${source.slice('"use strict";'.length)}`);
  expect(readFileSync(bundle()).length).toBe(Buffer.byteLength(source));
  const loaded = requireBundle(bundle());
  expect(loaded.cache).toBe("for another bundle");
  expect(storeFactory(loaded.exports)).toBe("function");
});

it("a cache with the right hash but damaged data is rejected by V8 and the bundle compiles from source", () => {
  const cache = readFileSync(join(DIST, `${BUNDLE}.v8cache`));
  const damaged = Buffer.concat([cache.subarray(0, 32), Buffer.alloc(cache.length - 32, 0x5a)]);
  writeFileSync(join(dir, `${BUNDLE}.v8cache`), damaged);
  const loaded = requireBundle(bundle());
  expect(loaded.cache).toBe("rejected by V8");
  expect(storeFactory(loaded.exports)).toBe("function");
});
