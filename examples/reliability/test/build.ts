import { execFileSync } from "node:child_process";
import { join } from "node:path";

// The campaigns run the real built programs: the CNI plugin (examples/cni-plugin/dist) and the
// reconciler (examples/cron-reconciler/dist), built once per run from the current sources.
export function setup(): void {
  for (const example of ["cni-plugin", "cron-reconciler"]) {
    execFileSync("node", ["build.mjs"], { cwd: join(import.meta.dirname, "..", "..", example), stdio: "pipe" });
  }
}
