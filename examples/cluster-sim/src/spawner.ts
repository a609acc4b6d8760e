import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { compiledC } from "./native.js";

/** One process to run: its path (looked up in PATH), arguments, exact environment and stdin. */
export interface SpawnRequest {
  path: string;
  args?: string[];
  env: Record<string, string>;
  stdin: string;
}

export interface SpawnResult {
  /** The exit code, or 128 + the signal that ended it; 127 when it could not be started. */
  code: number;
  stdout: string;
  /** Its own CPU seconds (user + system), when the spawner knows them. */
  cpu?: number;
  /** Its own minor page faults (each page it touched first), when the spawner knows them. */
  faults?: number;
}

/** How the simulation starts its CNI processes, as a node's container runtime does. */
export interface Spawner {
  readonly kind: SpawnerKind;
  run(request: SpawnRequest): Promise<SpawnResult>;
  /** Helper processes of the simulation: their own CPU is the simulation's, their reaped children's the CNI processes'. */
  helperPids(): number[];
  close(): Promise<void>;
}

/** node: Node's `spawn` (a fork of this process); native: posix_spawn from a small C launcher, as Go runtimes spawn. */
export type SpawnerKind = "node" | "native";

/** Node's `child_process.spawn` from this process: its fork copies this process's page tables per call. */
export const nodeSpawner: Spawner = {
  kind: "node",
  run(request) {
    return new Promise((resolve) => {
      const child = spawn(request.path, request.args ?? [], { env: request.env, stdio: ["pipe", "pipe", "ignore"] });
      let stdout = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.on("error", () => resolve({ code: 127, stdout }));
      child.on("close", (code, signal) => resolve({ code: code ?? 128 + (signal === null ? 0 : constants.signals[signal]), stdout }));
      child.stdin.on("error", () => {}); // a child that exits without reading its stdin
      child.stdin.end(request.stdin);
    });
  },
  helperPids: () => [],
  close: async () => {},
};

/** The launcher compiled from src/launcher.c (cached by its source's hash); a clear error without a C compiler. */
export function launcherBinary(): string {
  return compiledC({ source: "launcher.c", neededBy: "the native spawner", otherwise: "or run with --spawner node" });
}

/** Little-endian u32s and length-prefixed strings, as src/launcher.c reads them. */
function frame(id: number, request: SpawnRequest): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    parts.push(b);
  };
  const str = (s: string) => {
    const b = Buffer.from(s);
    u32(b.length);
    parts.push(b);
  };
  const args = request.args ?? [];
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  u32(id);
  str(request.path);
  u32(args.length);
  for (const a of args) str(a);
  u32(env.length);
  for (const e of env) str(e);
  str(request.stdin);
  return Buffer.concat(parts);
}

const HEAD = 24;
/** The launcher writes a child's stdin in one go, before reading its stdout: it must fit a pipe's buffer. */
export const MAX_STDIN = 65536;

/** Starts one launcher process (src/launcher.c) that spawns every request with posix_spawn. */
export function startNativeSpawner(): Spawner {
  const launcher: ChildProcess = spawn(launcherBinary(), [], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  const pending = new Map<number, (result: SpawnResult) => void>();
  let nextId = 1;
  let buffered: Buffer = Buffer.alloc(0);
  let ended: Error | undefined;
  launcher.stdout?.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= HEAD) {
      const outLength = buffered.readUInt32LE(20);
      if (buffered.length < HEAD + outLength) break;
      const id = buffered.readUInt32LE(0);
      const cpu = (buffered.readUInt32LE(8) + buffered.readUInt32LE(12)) / 1e6;
      const faults = buffered.readUInt32LE(16);
      const result = { code: buffered.readUInt32LE(4), stdout: buffered.toString("utf8", HEAD, HEAD + outLength), cpu, faults };
      buffered = buffered.subarray(HEAD + outLength);
      pending.get(id)?.(result);
      pending.delete(id);
    }
  });
  const exited = new Promise<void>((resolve) =>
    launcher.once("exit", (code, signal) => {
      ended = new Error(`the launcher exited (${signal ?? code})`);
      for (const resolveOne of pending.values()) resolveOne({ code: 127, stdout: "" });
      pending.clear();
      resolve();
    }),
  );
  return {
    kind: "native",
    run(request) {
      if (ended !== undefined) return Promise.reject(ended);
      if (Buffer.byteLength(request.stdin) > MAX_STDIN)
        return Promise.reject(
          new RangeError(`stdin of ${Buffer.byteLength(request.stdin)} bytes: the native spawner takes at most ${MAX_STDIN}`),
        );
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        launcher.stdin?.write(frame(id, request));
      });
    },
    helperPids: () => (ended === undefined && launcher.pid !== undefined ? [launcher.pid] : []),
    async close() {
      launcher.stdin?.end();
      await exited;
    },
  };
}

export function startSpawner(kind: SpawnerKind): Spawner {
  return kind === "native" ? startNativeSpawner() : nodeSpawner;
}
