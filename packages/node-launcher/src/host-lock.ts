import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * One real node at a time on a host: a node's restore puts back the host's global state (sysctls,
 * iptables, cgroups) as it was before it started, which would undo another node's changes. Test
 * files in other projects or workers wait here. A lock whose holder died is taken over.
 */
export const HOST_LOCK = "/run/ipamkit-node.lock";

function holderAlive(): boolean {
  try {
    const pid = Number(readFileSync(join(HOST_LOCK, "pid"), "utf8"));
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Waits (up to `timeoutMs`) until this process holds the host lock; returns its release. */
export async function lockHost(timeoutMs = 300_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(HOST_LOCK);
      writeFileSync(join(HOST_LOCK, "pid"), String(process.pid));
      return () => rmSync(HOST_LOCK, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      // a holder that has not written its pid yet is alive: wait for it
      const stale = (() => {
        try {
          readFileSync(join(HOST_LOCK, "pid"));
          return !holderAlive();
        } catch {
          return false;
        }
      })();
      if (stale) rmSync(HOST_LOCK, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`[node-launcher] another real node holds ${HOST_LOCK} for more than ${timeoutMs} ms`);
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
}
