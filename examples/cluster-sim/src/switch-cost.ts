import { execFileSync } from "node:child_process";
import { compiledC } from "./native.js";

/** One ring run of src/process-switch.c: microseconds per hop. */
export interface HopCost {
  /** CPU of all the ring's processes, user and system. */
  user: number;
  system: number;
  wall: number;
}

export interface RingOptions {
  /** Processes taking turns. */
  processes: number;
  /** KiB each writes (one byte per 64-byte line) every time it wakes. */
  kb: number;
  /** Wake-ups in all (rounded down to a multiple of `processes`). */
  hops: number;
}

const binary = () => compiledC({ source: "process-switch.c", neededBy: "pnpm process-switch" });

const numbers = (output: string, count: number): number[] => {
  const values = output.trim().split(" ").map(Number);
  if (values.length !== count || values.some((n) => !Number.isFinite(n)))
    throw new Error(`process-switch printed ${JSON.stringify(output)}`);
  return values;
};

/** K processes passing one token round a ring, each touching its working set when it wakes. */
export function ringHop(options: RingOptions): HopCost {
  const out = execFileSync(binary(), ["ring", String(options.processes), String(options.kb), String(options.hops)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [user = 0, system = 0, wall = 0] = numbers(out, 3);
  return { user, system, wall };
}

/** The CPU microseconds per 4 KiB page faulted in afresh after MADV_DONTNEED, and how many faults were counted. */
export function faultCost(options: { kb: number; rounds: number }): { micros: number; faults: number } {
  const out = execFileSync(binary(), ["faults", String(options.kb), String(options.rounds)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [micros = 0, faults = 0] = numbers(out, 2);
  return { micros, faults };
}
