import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** A private copy of examples/cni-plugin/dist, built for this run. */
    pluginDist: string;
    /** This package's dist (ipamkit-install). */
    installDist: string;
  }
}

// The tests install and run the real built files: build the installer and the plugin once per run,
// and work on a copy of the plugin's dist, so that another run rebuilding it cannot pull files away.
let copy: string | undefined;
export function setup(project: TestProject): void {
  const root = join(import.meta.dirname, "..");
  const plugin = join(root, "..", "cni-plugin");
  execFileSync("node", ["build.mjs"], { cwd: root, stdio: "pipe" });
  execFileSync("node", ["build.mjs"], { cwd: plugin, stdio: "pipe" });
  copy = mkdtempSync(join(tmpdir(), "ipamkit-install-plugin-"));
  cpSync(join(plugin, "dist"), copy, { recursive: true });
  project.provide("pluginDist", copy);
  project.provide("installDist", join(root, "dist"));
}

export function teardown(): void {
  if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
}
