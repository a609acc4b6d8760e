import { execFileSync } from "node:child_process";
import { chmodSync } from "node:fs";
import { join } from "node:path";

// The tests run the real built binary: build it once per run.
export function setup(): void {
  const root = join(import.meta.dirname, "..");
  execFileSync("node", ["build.mjs"], { cwd: root, stdio: "pipe" });
  chmodSync(join(root, "dist", "ipamkit"), 0o755);
}
