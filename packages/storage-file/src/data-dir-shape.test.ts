import { execFile } from "node:child_process";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeTempDir } from "./fixtures/temp-dir.js";
import { bundleWorker } from "./fixtures/workers.js";

// Found by the hostile-input test (issue 39): a data_dir that is a dangling symlink (a volume not
// mounted yet behind it) or a directory that refuses new entries (/proc/self) made ensureDirectory
// retry mkdir without bound — 100 % CPU and growing memory, no answer (the spin never yields to
// the event loop, so each write runs in its own process with a deadline). Each shape now fails at
// once with a typed error naming the directory.

let tmp: Awaited<ReturnType<typeof makeTempDir>>;
let bundle: string;
beforeAll(async () => {
  tmp = await makeTempDir("ipamkit-shape-");
  bundle = await bundleWorker(tmp.dir, "write-pool");
});
afterAll(() => tmp.remove());

interface Outcome {
  outcome: string;
  name?: string;
  code?: string;
  message?: string;
  ms: number;
}

/** One pool write to `dir` in a child process, killed after 10 s (the old code never answered). */
function write(dir: string): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [bundle, dir], { timeout: 10_000, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const ms = Date.now() - started;
      if (error !== null && stdout === "") resolve({ outcome: `no answer (${error.signal ?? error.code}) ${stderr}`.trim(), ms });
      else resolve({ ...(JSON.parse(stdout) as Omit<Outcome, "ms">), ms });
    });
  });
}

it("a data_dir that is a dangling symlink (a volume not mounted yet): STORE_UNAVAILABLE naming it and its target, at once", async () => {
  const store = join(tmp.dir, "dangling");
  const target = join(tmp.dir, "not-mounted");
  await symlink(target, store);
  const out = await write(store);
  expect(out).toMatchObject({ outcome: "error", name: "StoreUnavailableError", code: "STORE_UNAVAILABLE" });
  expect(out.message).toContain(`cannot create directory ${store}: it is a symbolic link to ${target}, which does not exist`);
  expect(out.ms).toBeLessThan(5000);
  expect(await readdir(tmp.dir)).not.toContain("not-mounted"); // nothing created behind it
});

it("a dangling symlink below the root (pools/): refused, not retried", async () => {
  const store = join(tmp.dir, "inner");
  await mkdir(store, { mode: 0o700 });
  await symlink(join(tmp.dir, "gone"), join(store, "pools"));
  const out = await write(store);
  expect(out).toMatchObject({ outcome: "error", code: "STORE_UNAVAILABLE" });
  expect(out.message).toContain(`cannot create directory ${join(store, "pools")}: it is a symbolic link`);
});

it("a data_dir where mkdir keeps failing with ENOENT (/proc/self): STORE_UNAVAILABLE at once", async () => {
  const out = await write("/proc/self");
  expect(out).toMatchObject({ outcome: "error", code: "STORE_UNAVAILABLE" });
  expect(out.message).toMatch(/cannot create directory \/proc\/self\/pools: ENOENT/);
  expect(out.ms).toBeLessThan(5000);
});

it("a data_dir that is a regular file: STORE_UNAVAILABLE (ENOTDIR) naming the path, at once", async () => {
  const store = join(tmp.dir, "file");
  await writeFile(store, "x", { mode: 0o600 });
  const out = await write(store);
  expect(out).toMatchObject({ outcome: "error", code: "STORE_UNAVAILABLE" });
  expect(out.message).toContain(`${join(store, "pools")}`);
  expect(out.message).toMatch(/: ENOTDIR$/);
  expect(out.ms).toBeLessThan(5000);
});

it("an ordinary missing data_dir is still created and written", async () => {
  const out = await write(join(tmp.dir, "fresh", "store"));
  expect(out.outcome).toBe("written");
});
