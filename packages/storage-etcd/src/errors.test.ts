import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { GRPCDeadlineExceededError, GRPCUnavailableError } from "etcd3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEtcdError } from "./errors.js";

// Found by the hostile-input test (issue 39): in the minified CNI bundle etcd errors read
// `Ba: 14 UNAVAILABLE: …` and `ka: 4 DEADLINE_EXCEEDED: …` — the message named the error's class,
// which the minifier renames. They now name the gRPC status: `etcd UNAVAILABLE (14): …`.

/** The store's read, bundled and minified as examples/cni-plugin/build.mjs does, run as its own process. */
const PROGRAM = `
import { createEtcdStore } from "./index.ts";
(async () => {
  const store = createEtcdStore({ endpoints: [process.argv[2]], dialTimeoutMs: 500, requestTimeoutMs: 1000 });
  try {
    await store.readPool({ network: "", cidr: "10.70.0.0/24" });
    console.log(JSON.stringify({ outcome: "read" }));
  } catch (error) {
    console.log(JSON.stringify({ outcome: "error", code: error.code, message: error.message }));
  }
  await store.close();
  process.exit(0);
})();
`;

const dir = mkdtempSync(join(tmpdir(), "ipamkit-etcd-errors-"));
const bundle = join(dir, "lib", "read.cjs");
let etcd: EtcdInstance;

beforeAll(async () => {
  // esbuild as tsup (this package's build tool) brings it
  const esbuild = createRequire(createRequire(import.meta.url).resolve("tsup")).resolve("esbuild");
  const { build } = (await import(esbuild)) as { build: (options: Record<string, unknown>) => Promise<unknown> };
  await build({
    stdin: { contents: PROGRAM, resolveDir: import.meta.dirname, loader: "ts" },
    outfile: bundle,
    bundle: true,
    minify: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    conditions: ["@ipamkit/source", "import", "module", "node"],
    logLevel: "silent",
  });
  // etcd3 reads its .proto files from `<its dir>/../proto` at run time (the CNI build inlines them)
  const etcd3 = dirname(createRequire(import.meta.url).resolve("etcd3/package.json"));
  cpSync(join(etcd3, "proto"), join(dir, "proto"), { recursive: true });
  etcd = await startEtcd();
}, 60_000);

afterAll(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function read(endpoint: string): Promise<{ outcome: string; code?: string; message?: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bundle, endpoint], { timeout: 20_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`read exited: ${stderr.slice(-2000)}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

/** A minified class name before a gRPC status, as the old messages had (`Ba: 14 UNAVAILABLE`). */
const CLASS_PREFIX = /\b[A-Za-z_$][\w$]*: \d+ [A-Z_]+/;

describe("etcd errors through a minified bundle name the gRPC status, not a class", () => {
  it("a paused etcd (SIGSTOP): `etcd DEADLINE_EXCEEDED (4): …`", async () => {
    expect(await read(etcd.endpoint)).toEqual({ outcome: "read" });
    process.kill(etcd.pid as number, "SIGSTOP");
    try {
      const out = await read(etcd.endpoint);
      expect(out.code).toBe("STORE_UNAVAILABLE");
      expect(out.message).toContain(etcd.endpoint);
      expect(out.message).toMatch(/: etcd DEADLINE_EXCEEDED \(4\): Deadline exceeded/);
      expect(out.message).not.toMatch(CLASS_PREFIX);
      console.info(`[etcd errors] paused: ${out.message}`);
    } finally {
      process.kill(etcd.pid as number, "SIGCONT");
    }
  });

  it("a stopped etcd: `etcd UNAVAILABLE (14): …`", async () => {
    const endpoint = etcd.endpoint;
    await etcd.stop();
    const out = await read(endpoint);
    expect(out.code).toBe("STORE_UNAVAILABLE");
    expect(out.message).toMatch(/etcd unavailable for .* on .*: etcd UNAVAILABLE \(14\): \S/);
    expect(out.message).not.toMatch(CLASS_PREFIX);
    console.info(`[etcd errors] stopped: ${out.message}`);
  });
});

describe("describeEtcdError", () => {
  it("names the status of an etcd3 error whose message does not carry it", () => {
    expect(describeEtcdError(new GRPCDeadlineExceededError("Deadline exceeded"))).toBe("etcd DEADLINE_EXCEEDED (4): Deadline exceeded");
    expect(describeEtcdError(new GRPCUnavailableError("14 UNAVAILABLE: No connection established"))).toBe(
      "etcd UNAVAILABLE (14): No connection established",
    );
    expect(describeEtcdError(new Error("etcdserver: request timed out"))).toBe("etcdserver: request timed out");
  });
});
