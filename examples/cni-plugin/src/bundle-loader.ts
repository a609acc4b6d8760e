import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname } from "node:path";
import { constants, Script } from "node:vm";

/**
 * A self-contained CommonJS bundle loaded with V8's code cache: `<bundle>.v8cache`, written by the
 * build (`writeCodeCache`), holds the SHA-256 of the bundle it was made from and V8's compiled code.
 * V8 itself checks only its version, its flags and the source's length, so the hash is what keeps
 * a cache from being used with another bundle. Without a usable cache the bundle compiles as
 * `require` would compile it — the cache only saves time (~50 ms of CPU for the 1 MB Kubernetes
 * bundle on these machines, at every agent start and every direct-mode call).
 */
export type CodeCacheUse = "accepted" | "rejected by V8" | "for another bundle" | "absent";

const HASH_BYTES = 32;
const loaded = new Map<string, { exports: unknown; cache: CodeCacheUse }>();

const sha256 = (source: string) => createHash("sha256").update(source).digest();

function compile(path: string, source: string, cachedData?: Buffer): Script {
  return new Script(Module.wrap(source), {
    filename: path,
    ...(cachedData === undefined ? {} : { cachedData }),
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
}

/** Runs a compiled bundle as the CommonJS module at `path`; returns its exports. */
function run(script: Script, path: string): unknown {
  const module = new Module(path);
  module.filename = path;
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, createRequire(path), module, path, dirname(path));
  module.loaded = true;
  return module.exports;
}

/** Loads the bundle at `path` once per process (like `require`), with its code cache when that fits. */
export function requireBundle(path: string): { exports: unknown; cache: CodeCacheUse } {
  const done = loaded.get(path);
  if (done !== undefined) return done;
  const source = readFileSync(path, "utf8");
  let cache: CodeCacheUse = "absent";
  let cachedData: Buffer | undefined;
  try {
    const file = readFileSync(`${path}.v8cache`);
    if (file.length > HASH_BYTES && file.subarray(0, HASH_BYTES).equals(sha256(source))) cachedData = file.subarray(HASH_BYTES);
    else cache = "for another bundle";
  } catch {
    // no cache file: compile from source
  }
  const script = compile(path, source, cachedData);
  if (cachedData !== undefined) cache = script.cachedDataRejected === true ? "rejected by V8" : "accepted";
  const result = { exports: run(script, path), cache };
  loaded.set(path, result);
  return result;
}

/**
 * Writes `<bundle>.v8cache` for the bundle at `path`: compiles it, runs its top level (loading a
 * bundle must have no effects beyond defining its exports) so that the functions it runs are in
 * the cache too, and saves the hash and V8's data. Run by the build with the Node that will run it.
 */
export function writeCodeCache(path: string, write: (file: string, data: Buffer) => void): void {
  const source = readFileSync(path, "utf8");
  const script = compile(path, source);
  run(script, path);
  write(`${path}.v8cache`, Buffer.concat([sha256(source), script.createCachedData()]));
}
