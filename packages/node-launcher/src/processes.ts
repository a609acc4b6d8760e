import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

const children = new Set<ChildProcess>();
let exitHookInstalled = false;
/** A test process that exits without stop() must not leave a kubelet or containerd behind. */
function killOnExit(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => children.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const c of children) c.kill("SIGKILL");
  });
}

export interface Daemon {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  exited(): string | undefined;
  logTail(lines?: number): string;
  /** SIGTERM, SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
  kill(): Promise<void>;
}

/** Spawns `command` with its output appended to `<logs>/<name>.log`. */
export function startDaemon(options: {
  name: string;
  command: string;
  args: readonly string[];
  logs: string;
  env?: NodeJS.ProcessEnv;
}): Daemon {
  const logFile = join(options.logs, `${options.name}.log`);
  const log = openSync(logFile, "a");
  const child = spawn(options.command, options.args, { stdio: ["ignore", log, log], env: options.env ?? process.env });
  closeSync(log);
  killOnExit(child);
  const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const logTail = (lines = 30) => {
    try {
      return readFileSync(logFile, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  };
  return {
    name: options.name,
    child,
    logFile,
    logTail,
    exited: () => (alive() ? undefined : `${options.name} exited (${child.exitCode ?? child.signalCode}):\n${logTail()}`),
    async stop(graceMs = 10_000) {
      if (!alive()) return;
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      child.kill("SIGTERM");
      await done;
      clearTimeout(timer);
    },
    async kill() {
      if (!alive()) return;
      child.kill("SIGKILL");
      await done;
    },
  };
}

/** The pids of containerd shims serving the containerd at `address` (their command line names it). */
export function shimPids(shim: string, address: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(join("/proc", entry, "cmdline"), "utf8").split("\0");
      if (argv[0] === shim && argv.includes(address)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * The pids of containerd shims running in the mount namespace of `nsPid` (a cluster node's): two
 * nodes' shims name the same in-namespace socket path, so the namespace tells them apart.
 */
export function shimPidsInMountNamespace(shim: string, nsPid: number): number[] {
  const ns = (pid: number | string) => {
    try {
      return readlinkSync(join("/proc", String(pid), "ns", "mnt"));
    } catch {
      return "";
    }
  };
  const want = ns(nsPid);
  if (want === "") return [];
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(join("/proc", entry, "cmdline"), "utf8").split("\0")[0] === shim && ns(entry) === want;
      } catch {
        return false;
      }
    })
    .map(Number);
}

export function killPids(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(
  what: string,
  timeoutMs: number,
  check: () => boolean | Promise<boolean>,
  failed?: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = failed?.();
    if (why !== undefined) throw new Error(`[node-launcher] ${why}`);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`[node-launcher] timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

/** Runs a command to its end; throws with its stderr when it fails. */
export function must(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): string {
  const r = spawnSync(command, args, { encoding: "utf8", env: env ?? process.env, timeout: 120_000 });
  if (r.status !== 0)
    throw new Error(
      `[node-launcher] ${command} ${args.join(" ")} failed (${r.error?.message ?? r.status}): ${(r.stderr ?? "").trim().slice(-800)}`,
    );
  return r.stdout.trim();
}

export const isSocket = (path: string) => existsSync(path);
