/**
 * What one applied pool write may change, judged from the pool before and after it: the protocol
 * model's rule (no write drops another writer's entry; the reconciler drops no live attachment's)
 * and the rules of sticky addresses (DESIGN.md, "Sticky addresses", which the model abstracts):
 * a sticky address is never freed in one step — a DEL or a reconciler's release marks it kept —
 * a kept one is freed only by the reconciler once its keep time has run out, and it moves only to
 * a key of its own pod (a rebind: kept, or held for a known other UID). Written from those rules,
 * not from the code's helpers, so that a bug in them is a violation here. Test helper of the trace
 * link (not part of the package's API).
 */

/** One entry of a pool as the checks see it. */
export interface Entry {
  pool: number;
  address: number;
  key: number;
  podRef: string;
  podUid: string;
  /** Keep seconds (written at ADD on a sticky network). */
  sticky: number | undefined;
  /** Set while the address is kept for its pod (released, held by no attachment). */
  releasedAt: string | undefined;
}

export const isKeptEntry = (e: Entry): boolean => e.releasedAt !== undefined;

/** Whether a kept entry's keep time has run out at `now`. */
export function keepRanOut(e: Entry, now: Date): boolean {
  return e.releasedAt !== undefined && Date.parse(e.releasedAt) + (e.sticky ?? 0) * 1000 <= now.getTime();
}

/** Who wrote. */
export interface Writer {
  /** As printed: "@1 writePool 3". */
  what: string;
  /** 1, 2: allocators; 3: the reconciler. */
  actor: number;
  /** The allocator's command. */
  command?: "add" | "del" | "del kept";
  /** The allocator's key, pod name and UID. */
  key?: number;
  podRef?: string;
  podUid?: string;
  /** The allocator's network is sticky. */
  sticky: boolean;
  alive(key: number): boolean;
  /** The run's clock as the write ran. */
  now: Date;
}

/** What the write did to an entry, for the run's tallies. */
export type WriteEvent = "kept" | "held again" | "rebound" | "expired" | "freed";

export interface WriteJudgement {
  violation?: string;
  events: WriteEvent[];
}

/** Judges one applied write of pool `pool`: every entry it held before, against what it holds after. */
export function judgePoolWrite(pool: number, before: readonly Entry[], after: readonly Entry[], w: Writer): WriteJudgement {
  const events: WriteEvent[] = [];
  const dels = w.command === "del" || w.command === "del kept";
  const bad = (violation: string): WriteJudgement => ({ violation: `${w.what} ${violation}`, events });
  for (const e of before.filter((x) => x.pool === pool)) {
    const at = `key ${e.key}'s entry at a${e.address} of pool ${pool}`;
    const now = after.find((x) => x.pool === pool && x.address === e.address);
    if (now !== undefined && now.key === e.key) {
      if (!isKeptEntry(e) && isKeptEntry(now)) {
        // marked kept: by its own DEL, or by the reconciler releasing a dead attachment's
        if (!((dels && w.key === e.key) || (w.actor === 3 && !w.alive(e.key)))) return bad(`marked ${at} kept, its attachment live`);
        events.push("kept");
      } else if (isKeptEntry(e) && !isKeptEntry(now)) {
        if (!(w.command === "add" && w.key === e.key)) return bad(`held ${at}, kept, again: not an ADD of that key`);
        events.push("held again");
      }
      continue;
    }
    if (now !== undefined) {
      // another key at the address: only a rebind to an ADD of the same pod under a new key
      const rebind =
        w.command === "add" &&
        now.key === w.key &&
        e.sticky !== undefined &&
        e.podRef === w.podRef &&
        (isKeptEntry(e) || (e.podUid !== "" && e.podUid !== w.podUid));
      if (!rebind) return bad(`took ${at} over for key ${now.key}`);
      events.push("rebound");
      continue;
    }
    // the address is free now
    if (w.actor === 3) {
      if (isKeptEntry(e)) {
        if (!keepRanOut(e, w.now)) return bad(`freed ${at}, kept since ${e.releasedAt} for ${e.sticky} s, before its keep time ran out`);
        events.push("expired");
        continue;
      }
      if (w.alive(e.key)) return bad(`dropped ${at} (a live attachment's)`);
      if (e.sticky !== undefined) return bad(`freed ${at}, sticky, in one step (not kept first)`);
      events.push("freed");
      continue;
    }
    if (!(dels && e.key === w.key)) return bad(`dropped ${at}`);
    // on a sticky network a DEL marks its sticky entry kept, and leaves a kept one as it is
    if (w.sticky && e.sticky !== undefined) return bad(`freed ${at}, ${isKeptEntry(e) ? "kept" : "sticky"}, at its DEL`);
    events.push("freed");
  }
  return { events };
}
