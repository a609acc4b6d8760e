/**
 * A random schedule of the real code in the protocol model's world, without the model: the
 * actors' calls (ADD, DEL, DEL then ADD again; reconciler passes during them and one after),
 * their held requests run in an order fast-check chooses, some writes of unknown outcome, an
 * actor crashing; the model's invariants checked after every request (LinkRun). Test helper of
 * the trace link: it reaches what the model abstracts (several unknown outcomes, a crash together
 * with them, sticky addresses).
 */
import { WRITES } from "./protocol-link.gate.fixtures.js";
import { LinkRun, type RunOptions, type Tally } from "./protocol-link.run.fixtures.js";
import { actorsOf, type Setup } from "./protocol-link.world.fixtures.js";

type Command = "add" | "del" | "del kept";

export interface RandomRun {
  setup: Setup;
  tries: { allocators: number; reconciler: number };
  /** Each allocator's calls, in order (the first an "add"). */
  scripts: Record<number, Command[]>;
  /** Reconciler passes while the allocators run (one more runs after them). */
  passes: number;
  /** Writes of unknown outcome, at most. */
  unknown: number;
  /** The actor that may crash once (0: none). */
  crasher: number;
  /** Deliberate bugs of the store or the pods (RunOptions). */
  broken?: Pick<RunOptions, "blind" | "delNoVersion" | "podsFirst">;
  /** The allocators remember across their calls (RunOptions.caches). */
  caches?: boolean;
  /** The store reads several claims in one request (RunOptions.batchReads). */
  batchReads?: boolean;
}

/** Runs the schedule the choices make; resolves, with what the run did, once the last pass has answered and the end was checked. */
export async function randomRun(config: RandomRun, choices: readonly number[]): Promise<Tally> {
  const run = new LinkRun({
    setup: config.setup,
    tries: config.tries,
    caches: config.caches === true,
    batchReads: config.batchReads === true,
    ...config.broken,
  });
  await run.start();
  let at = 0;
  const choose = (n: number) => (choices[at++ % choices.length] ?? 0) % n;
  const scripts = new Map(actorsOf(config.setup).map((a) => [a.id, [...(config.scripts[a.id] ?? ["add"])]]));
  let passes = config.passes;
  let unknown = config.unknown;
  let crasher = config.crasher;
  let final = false;
  let last = 0;
  for (let steps = 0; steps < 10_000; steps++) {
    await run.settle();
    const actions: { actor: number; act: () => Promise<void> | void }[] = [];
    for (const [id, script] of scripts) {
      const [next] = script;
      if (next === undefined || !run.idle(id) || !startable(run, config.setup, id)) continue;
      actions.push({
        actor: id,
        act: () => {
          script.shift();
          return run.command(id, next);
        },
      });
    }
    if (!final && passes > 0 && run.idle(3)) {
      actions.push({
        actor: 3,
        act: () => {
          passes -= 1;
          return run.command(3, "pass");
        },
      });
    }
    for (const id of [1, 2, 3]) {
      for (const request of run.requests(id)) {
        actions.push({
          actor: id,
          act: async () => {
            const write = WRITES.has(request.op);
            const lost = write && !final && unknown > 0 && choose(4) === 0;
            if (lost) unknown -= 1;
            await run.run(request, lost ? (choose(2) === 0 ? "r2" : "r3") : "r1");
            await run.check(`@${id} ${request.op} ${request.obj}`);
          },
        });
      }
      if (id === crasher && !run.idle(id) && !(id === 3 && final)) {
        actions.push({
          actor: -id, // never chosen as "the same actor again"
          act: () => {
            crasher = 0;
            run.crash(id);
            scripts.get(id)?.splice(0); // a crashed allocator calls nothing more
          },
        });
      }
    }
    if (actions.length === 0) {
      const allocatorsDone = [...scripts.keys()].every((id) => run.idle(id));
      if (!allocatorsDone || !run.idle(3))
        throw new Error(`nothing can run: ${run.pendingText()}; idle ${[1, 2, 3].map((i) => run.idle(i))}; ${run.log.join("; ")}`);
      if (final) {
        await run.end();
        return run.tally;
      }
      final = true;
      for (const script of scripts.values()) script.length = 0;
      await run.command(3, "pass");
      continue;
    }
    // most steps go on with the actor of the last one (long runs of one actor are as likely as any interleaving), some switch
    const same = actions.filter((a) => a.actor === last);
    const pool = same.length > 0 && choose(3) !== 0 ? same : actions;
    const chosen = pool[choose(pool.length)] as (typeof actions)[number];
    last = chosen.actor;
    await chosen.act();
  }
  throw new Error("the schedule did not end within 10 000 steps");
}

/** A command may start: with REBORN (key 2 named as key 1), key 2's pod only once key 1's is gone. */
function startable(run: LinkRun, setup: Setup, id: number): boolean {
  return id !== 2 || setup.podOf[2] !== setup.podOf[1] || setup.mode === "same-key" || run.podGone(1);
}
