import { join } from "node:path";
import { nodeSpawner, type Spawner } from "./spawner.js";

/** The real binary, built by `pnpm build` (examples/cni-plugin). */
export const PLUGIN = join(import.meta.dirname, "..", "..", "cni-plugin", "dist", "ipamkit");
export const AGENT = join(import.meta.dirname, "..", "..", "cni-plugin", "dist", "ipamkit-agent");

export interface CniCall {
  command: "ADD" | "DEL";
  containerId: string;
  ifName: string;
  pod: { namespace: string; name: string; uid: string };
  conf: string;
  /** The binary to run (default: the built dist/ipamkit). */
  plugin?: string;
}

export interface CniOutcome {
  ms: number;
  code: number;
  /** The process's own CPU seconds and minor page faults, when the spawner knows them. */
  cpu?: number;
  faults?: number;
  /** The address of an ADD (without prefix). */
  ip?: string;
  error?: string;
}

/** One CNI call: one process, as a runtime (via Multus) makes it, started by `spawner`. */
export async function runCni(call: CniCall, spawner: Spawner = nodeSpawner): Promise<CniOutcome> {
  const started = performance.now();
  // the simulated runtime of the call's node names its flat file (the config's configuration_path)
  const node = (JSON.parse(call.conf) as { ipam?: { configuration_path?: unknown } }).ipam?.configuration_path;
  const { code, stdout, cpu, faults } = await spawner.run({
    path: call.plugin ?? PLUGIN,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      CNI_COMMAND: call.command,
      CNI_CONTAINERID: call.containerId,
      CNI_IFNAME: call.ifName,
      CNI_NETNS: `/var/run/netns/${call.containerId}`,
      CNI_PATH: "/opt/cni/bin",
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${call.pod.namespace};K8S_POD_NAME=${call.pod.name};K8S_POD_UID=${call.pod.uid}`,
      ...(typeof node === "string" ? { IPAMKIT_CONFIGURATION_PATH: node } : {}),
    },
    stdin: call.conf,
  });
  const ms = performance.now() - started;
  const cost = { ...(cpu === undefined ? {} : { cpu }), ...(faults === undefined ? {} : { faults }) };
  if (code !== 0) return { ms, code, ...cost, error: stdout.trim() };
  if (call.command === "DEL") return { ms, code: 0, ...cost };
  const ip = (JSON.parse(stdout) as { ips?: { address: string }[] }).ips?.[0]?.address.split("/")[0];
  return { ms, code: 0, ...cost, ...(ip === undefined ? {} : { ip }) };
}

/** Runs `tasks` with at most `limit` at once. */
export async function limited<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await (tasks[i] as () => Promise<T>)();
      }
    }),
  );
  return results;
}

/** The q-quantile (0–1) of some latencies; 0 for none. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

/** A CNI plugin that does nothing: reads its stdin, answers `{}` — the cost of the process alone. */
const NOOP = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write('{}'))";

/** A process that does nothing but read its stdin: what a call costs before any IPAM work. */
export interface NoopProcess {
  label: string;
  command: string;
  args: string[];
}

/** The cost of a Node plugin (or of ipamkit's Node forwarder) before it does anything. */
export const NODE_NOOP: NoopProcess = { label: "no-op Node processes", command: process.execPath, args: ["-e", NOOP] };
/** The cost of any native plugin (Go, C — ipamkit's native forwarder) before it does anything. */
export const NATIVE_NOOP: NoopProcess = { label: "no-op native processes (cat)", command: "cat", args: [] };

/**
 * The floor of a phase on this machine: `calls` no-op processes (fed the same stdin), at most
 * `concurrency` at once, spawned by the same spawner as the CNI calls.
 */
export async function processFloor(options: {
  calls: number;
  concurrency: number;
  conf: string;
  noop: NoopProcess;
  spawner?: Spawner;
}): Promise<number> {
  const { calls, concurrency, conf, noop, spawner = nodeSpawner } = options;
  const started = performance.now();
  await limited(
    concurrency,
    Array.from({ length: calls }, () => async () => {
      await spawner.run({ path: noop.command, args: noop.args, env: { PATH: process.env.PATH ?? "" }, stdin: conf });
    }),
  );
  return (performance.now() - started) / 1000;
}
