/**
 * A run of the protocol model — a spin trail (`spin -t`) or a random simulation (`spin -n<seed>`)
 * — replayed against the real code as a schedule: each "MSC: @actor ..." line the model prints
 * is one step the code must take at that point (a request it holds at the gate, with the same
 * name, answered the same way), and each "MSC: S ..." line the stores as they must be after that
 * write. The model's invariants are checked on the store after every step (LinkRun). Test helper
 * of the trace link.
 */
import { type Op, type Outcome, WRITES } from "./protocol-link.gate.fixtures.js";
import { Divergence, LinkRun, type RunOptions } from "./protocol-link.run.fixtures.js";
import type { Setup } from "./protocol-link.world.fixtures.js";

const MODES: Setup["mode"][] = ["two-nodes", "same-node", "overlap", "same-key"];

/** What a model run's -D flags and its mode (the model's init prints it) say about the code's run. */
export function runOptionsFor(defines: readonly string[], mode: number): RunOptions {
  const has = (flag: string) => defines.includes(`-D${flag}`);
  const value = (flag: string) => defines.find((d) => d.startsWith(`-D${flag}=`))?.split("=")[1];
  const tries = Number(value("MAXTRY") ?? 2);
  const setup: Setup = {
    mode: MODES[mode - 1] ?? "two-nodes",
    alone: has("ALONE"),
    podOf: has("REBORN") ? { 1: 1, 2: 1, 3: 3 } : { 1: 1, 2: 2, 3: 3 },
  };
  return {
    setup,
    tries: { allocators: Number(value("ATRY") ?? tries), reconciler: Number(value("RTRY") ?? tries) },
    blind: has("BROKEN_BLIND"),
    delNoVersion: has("BROKEN_DELNOVER"),
    podsFirst: has("BROKEN_PODSFIRST"),
  };
}

export type LinkEvent =
  | { kind: "mode"; mode: number }
  | { kind: "command"; actor: number; command: "add" | "del" | "del kept" | "pass" }
  | { kind: "crash"; actor: number }
  | { kind: "held"; actor: number; pool: number; address: number }
  | { kind: "end" }
  | { kind: "request"; actor: number; op: Op; obj: number; outcome: Outcome; state?: string };

const OPS = new Set<string>([
  "readPool",
  "writePool",
  "readClaim",
  "readClaims",
  "writeClaim",
  "deleteClaim",
  "readAff",
  "writeAff",
  "listPools",
  "listClaims",
  "listPods",
  "getPod",
]);

/** The model's steps, from spin's output (other lines ignored). */
export function parseModelRun(text: string): LinkEvent[] {
  const events: LinkEvent[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line.startsWith("MSC: ")) continue;
    const words = line.slice(5).trim().split(/\s+/);
    const [head, ...rest] = words;
    if (head === "S") {
      const last = events.at(-1);
      if (last?.kind !== "request" || !WRITES.has(last.op)) throw new Error(`a store line after no write: ${line}`);
      last.state = rest.join(" ");
      continue;
    }
    const actor = Number(head?.slice(1));
    const [what = "", ...args] = rest;
    if (what === "mode") events.push({ kind: "mode", mode: Number(args[0]) });
    else if (what === "add" || what === "pass") events.push({ kind: "command", actor, command: what });
    else if (what === "del") events.push({ kind: "command", actor, command: args[0] === "kept" ? "del kept" : "del" });
    else if (what === "crash") events.push({ kind: "crash", actor });
    else if (what === "held") events.push({ kind: "held", actor, pool: Number(args[0]), address: Number(args[1]) });
    else if (what === "end") events.push({ kind: "end" });
    else if (OPS.has(what))
      events.push({ kind: "request", actor, op: what as Op, obj: Number(args[0] ?? 0), outcome: (args[1] ?? "r1") as Outcome });
    else throw new Error(`not a step of the model: ${line}`);
  }
  return events;
}

const describe = (e: LinkEvent) =>
  e.kind === "request" ? `@${e.actor} ${e.op} ${e.obj}${WRITES.has(e.op) ? ` ${e.outcome}` : ""}` : JSON.stringify(e);

/**
 * Replays the model's steps against the code; throws InvariantViolation when the code breaks an
 * invariant, Divergence when it does not do what the model does. Resolves with the steps replayed.
 */
export async function replayModelRun(events: readonly LinkEvent[], defines: readonly string[]): Promise<number> {
  const [first] = events;
  if (first?.kind !== "mode") throw new Error("the model run prints no mode first");
  const run = new LinkRun(runOptionsFor(defines, first.mode));
  await run.start();
  for (const [i, e] of events.entries()) {
    if (e.kind === "mode") continue;
    const at = `step ${i + 1} of ${events.length} (${describe(e)})`;
    try {
      await step(run, e);
    } catch (error) {
      if (error instanceof Error) error.message = `${at}: ${error.message}`;
      throw error;
    }
  }
  return events.length;
}

async function step(run: LinkRun, e: LinkEvent): Promise<void> {
  if (e.kind === "command") return run.command(e.actor, e.command);
  await run.settle();
  if (e.kind === "crash") return run.crash(e.actor);
  if (e.kind === "held") return run.held(e.actor, e.pool, e.address);
  if (e.kind === "end") return run.end();
  if (e.kind === "mode") return;
  const request = run.find(e.actor, e.op, e.obj);
  const ran = await run.run(request, e.outcome);
  if (WRITES.has(e.op) && (e.outcome === "r0" || e.outcome === "r1") && ran.applied !== (e.outcome === "r1")) {
    throw new Divergence(
      `the model's write was ${e.outcome === "r1" ? "done" : "refused"}, the code's ${ran.applied ? "done" : "refused"}`,
    );
  }
  if (e.state !== undefined) {
    const state = await run.state();
    if (state !== e.state) throw new Divergence(`the stores are\n  ${state}\nwhere the model has\n  ${e.state}`);
  }
  await run.check(describe(e));
}
