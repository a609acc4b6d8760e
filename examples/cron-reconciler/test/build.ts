import { execFileSync } from "node:child_process";
import { join } from "node:path";

// The tests run the real built program: build it once per run.
export function setup(): void {
  execFileSync("node", ["build.mjs"], { cwd: join(import.meta.dirname, ".."), stdio: "pipe" });
}
