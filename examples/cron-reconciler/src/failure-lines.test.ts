import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMain, startMain } from "../test/run.js";

// Found by the hostile-input test (issue 39): against an unreachable API server `--once` logged one
// clean line, but scheduled and watch passes logged pino's default error object — a JS stack trace,
// and the cause's message repeated (`connect ECONNREFUSED …: connect ECONNREFUSED …`). Every failure
// is now one line: its code and its message once, no stack.

let dir: string;
let closed: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-cron-fail-"));
  closed = join(dir, "kubeconfig");
  // https on a port nothing listens on: every request ends in ECONNREFUSED
  writeFileSync(
    closed,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n"),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Error and warning lines (pino levels 40 and 50). */
const failures = (lines: Record<string, unknown>[]) => lines.filter((l) => Number(l.level) >= 40);

/** One clean line: no stack anywhere in it, the ECONNREFUSED message once. */
function expectClean(line: Record<string, unknown>): void {
  const text = JSON.stringify(line);
  expect(text).not.toMatch(/\\n\s+at |"stack"/);
  expect(text.match(/connect ECONNREFUSED 127\.0\.0\.1:9/g)?.length ?? 0).toBeLessThanOrEqual(1);
}

/** Runs the program until it has logged `count` failures (at most 30 s; it may start slowly on a busy machine), then stops it. */
async function linesFor(args: string[], count: number): Promise<Record<string, unknown>[]> {
  const app = startMain(["--kubeconfig", closed, "--leader-election", "false", ...args]);
  const deadline = Date.now() + 30_000;
  while (failures(app.lines()).length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(await app.stop()).toBe(0);
  return app.lines();
}

describe("an unreachable API server: one clean line per failure", () => {
  it("--once (the reference)", async () => {
    const run = await runMain(["--kubeconfig", closed, "--once"]);
    expect(run.code).toBe(1);
    const [line, ...more] = failures(run.lines);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: 50, code: "STORE_UNAVAILABLE" });
    expect(String(line?.msg)).toMatch(/^reconciler failed: .*connect ECONNREFUSED 127\.0\.0\.1:9/);
    expectClean(line as Record<string, unknown>);
  });

  it("--schedule: each failed pass is `reconcile failed: <message>` with its code, once, no stack", async () => {
    const lines = failures(await linesFor(["--schedule", "* * * * * *"], 2));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expect(line).toMatchObject({ level: 50, code: "STORE_UNAVAILABLE" });
      expect(String(line.msg)).toMatch(
        /^reconcile failed: .*connect ECONNREFUSED 127\.0\.0\.1:9.* \(tried again at the next scheduled time\)$/,
      );
      expect(line).not.toHaveProperty("err");
      expectClean(line);
    }
  });

  it("--watch: each failure's error is {type, code, message}, once, no stack", async () => {
    const lines = failures(await linesFor(["--watch"], 2));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expectClean(line);
      expect(Object.keys(line.err as object).sort()).toEqual(["code", "message", "type"]);
      expect(String((line.err as { message: string }).message)).toContain("connect ECONNREFUSED 127.0.0.1:9");
    }
  });
});

// Found by the hostile-input test (issue 39): with the file datastore and no kubeconfig anywhere the
// client fell back to http://localhost:8080 and the one line said only "HTTP protocol is not allowed
// when skipTLSVerify is not set or false" — neither the server nor that no kubeconfig was found.
describe("no kubeconfig anywhere", () => {
  it("--datastore file: exit 1, one line saying no kubeconfig was found and where it looked", async () => {
    // runMain gives the program only PATH: no KUBECONFIG, no HOME
    const run = await runMain(["--once", "--datastore", "file", "--data-dir", join(dir, "data")]);
    expect(run.code).toBe(1);
    const [line, ...more] = failures(run.lines);
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: 50, code: "INVALID_REQUEST" });
    expect(String(line?.msg)).toContain("no kubeconfig found: --kubeconfig not given, KUBECONFIG not set");
    expect(String(line?.msg)).toContain(
      "HOME not set, and no service account token at /var/run/secrets/kubernetes.io/serviceaccount/token",
    );
    expect(String(line?.msg)).not.toMatch(/HTTP protocol is not allowed/);
    expectClean(line as Record<string, unknown>);
  });

  it("a kubeconfig that is found is named, with its server, in the starting line", async () => {
    const run = await runMain(["--kubeconfig", closed, "--once"]);
    expect(run.lines[0]).toMatchObject({ msg: "ipamkit reconciler starting", kubeconfig: closed, server: "https://127.0.0.1:9" });
  });
});
