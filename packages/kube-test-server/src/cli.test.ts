import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { ippool, ippools } from "./test-support.js";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const built = join(packageDir, "dist", "cli.js");

/** The built CLI when `pnpm build` (turbo runs it before tests) is newer than the sources; else the source through tsx. */
function command(): string[] {
  const src = join(packageDir, "src");
  const newest = Math.max(...readdirSync(src).map((f) => statSync(join(src, f)).mtimeMs));
  return existsSync(built) && statSync(built).mtimeMs >= newest ? [built] : ["--import", "tsx", join(src, "cli.ts")];
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function run(args: string[]) {
  const child = spawn(process.execPath, [...command(), ...args], { cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += String(d);
  });
  child.stderr?.on("data", (d) => {
    stderr += String(d);
  });
  // "close", not "exit": the output read after it is whole (stdout and stderr may still be draining at "exit")
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", () => {
      if (stdout.includes("\n")) resolve(stdout.split("\n")[0] ?? "");
    });
    void exited.then((code) => reject(new Error(`cli exited (${code}) before printing its URL: ${stderr}`)));
  });
  firstLine.catch(() => {}); // only the serving test awaits it
  return { child, firstLine, exited, output: () => ({ stdout, stderr }) };
}

describe("cli", () => {
  it("writes a kubeconfig, prints its URL, serves, and exits 0 on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kube-test-server-cli-"));
    dirs.push(dir);
    const file = join(dir, "kubeconfig");
    const cli = run(["--port", "0", "--kubeconfig", file, "--namespace", "cli-ns", "--token", "t0k3n"]);
    const line = await cli.firstLine;
    expect(line).toMatch(/^kube-test-server listening on http:\/\/127\.0\.0\.1:\d+$/);

    const config = new KubeConfig();
    config.loadFromFile(file);
    expect(config.getCurrentCluster()?.server).toBe(line.replace("kube-test-server listening on ", ""));
    const namespace = config.getContextObject(config.getCurrentContext())?.namespace ?? "";
    expect(namespace).toBe("cli-ns");
    const api = config.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({ ...ippools(namespace), body: ippool("from-cli") });
    expect(await api.getNamespacedCustomObject({ ...ippools(namespace), name: "from-cli" })).toMatchObject({
      metadata: { name: "from-cli" },
    });

    cli.child.kill("SIGTERM");
    expect(await cli.exited).toBe(0);
    expect(cli.output().stdout.trim().split("\n")).toHaveLength(1);
    await expect(api.getNamespacedCustomObject({ ...ippools(namespace), name: "from-cli" })).rejects.toThrow();
  });

  it.each([[["--port", "http"]], [["--port", "70000"]], [["--bogus"]], [["stray"]]])(
    "exits 2 with one line on stderr for %j",
    async (args) => {
      const cli = run(args);
      expect(await cli.exited).toBe(2);
      const { stderr } = cli.output();
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(stderr).toMatch(/^kube-test-server: /);
    },
  );
});
