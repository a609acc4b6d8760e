import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type HostState, restoreHost } from "./host-state.js";

/**
 * One real node at a time on a host: a node's restore puts back the host's global state (sysctls,
 * iptables, cgroups) as it was before it started, which would undo another node's changes. Test
 * files in other projects or workers wait here. A lock whose holder died is taken over, after what
 * its holder noted to restore ({@link noteHostRestore}) is put back: a run killed mid-node leaves no
 * chains, sysctls, paths or links behind for the next one.
 */
export const HOST_LOCK = "/run/ipamkit-node.lock";
const RESTORE_NOTE = "restore.json";

interface RestoreNote {
  before: HostState;
  nodeDir: string;
  links: readonly string[];
}

/** Notes, in the lock this process holds, the host state to put back should it die holding it. */
export function noteHostRestore(before: HostState, options: { nodeDir: string; links: readonly string[] }): void {
  const note: RestoreNote = { before, nodeDir: options.nodeDir, links: options.links };
  writeFileSync(join(HOST_LOCK, RESTORE_NOTE), JSON.stringify(note));
}

/**
 * Takes a dead holder's lock out of the way (a rename: of several waiters, one does it) and puts
 * back what it noted; the others find the lock gone and race for it as usual.
 */
async function takeOverDeadHolder(): Promise<void> {
  const taken = `${HOST_LOCK}.dead-${process.pid}`;
  try {
    renameSync(HOST_LOCK, taken);
  } catch {
    return;
  }
  try {
    const note = JSON.parse(readFileSync(join(taken, RESTORE_NOTE), "utf8")) as RestoreNote;
    await restoreHost(note.before, { nodeDir: note.nodeDir, links: note.links });
    if (note.nodeDir.startsWith("/tmp/ipamkit-")) rmSync(note.nodeDir, { recursive: true, force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  } finally {
    rmSync(taken, { recursive: true, force: true });
  }
}

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
      if (stale) await takeOverDeadHolder();
      else if (Date.now() > deadline) throw new Error(`[node-launcher] another real node holds ${HOST_LOCK} for more than ${timeoutMs} ms`);
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
}
