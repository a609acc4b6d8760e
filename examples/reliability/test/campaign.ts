import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** `RELIABILITY=full` (`pnpm reliability`) runs every campaign at full size; CI runs a bounded form. */
export const FULL = process.env.RELIABILITY === "full";

/** The CI size or the full size of a campaign. */
export function scale(ci: number, full: number): number {
  return FULL ? full : ci;
}

/** A fixed seed per campaign, so a failure can be replayed; `RELIABILITY_SEED` overrides it. */
export function seed(fallback: number): number {
  const text = process.env.RELIABILITY_SEED;
  return text === undefined || text === "" ? fallback : Number(text);
}

const scratch: string[] = [];
// vitest ends its workers without a process "exit" event: remove them after each test file instead
afterAll(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh temporary directory, on /dev/shm when there is one (the file store fsyncs every write);
 * removed after the test file (/dev/shm is memory: left behind, every run would keep its own).
 */
export function scratchDir(prefix: string): string {
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(base, `ipamkit-rel-${prefix}-`));
  scratch.push(dir);
  return dir;
}

/** Path of the built plugin and its helpers (examples/cni-plugin/dist). */
export const CNI_PLUGIN_DIST = join(import.meta.dirname, "..", "..", "cni-plugin", "dist");
export const PLUGIN = join(CNI_PLUGIN_DIST, "ipamkit");
export const AGENT = join(CNI_PLUGIN_DIST, "ipamkit-agent");
/** The built reconciler program (examples/cron-reconciler/dist/main.js). */
export const RECONCILER = join(import.meta.dirname, "..", "..", "cron-reconciler", "dist", "main.js");

/** Counts of outcomes, printed as one summary line by each campaign (RELIABILITY.md quotes them). */
export class Tally {
  private readonly counts = new Map<string, number>();
  add(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  }
  get(label: string): number {
    return this.counts.get(label) ?? 0;
  }
  total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  toString(): string {
    return [...this.counts]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
  }
}
