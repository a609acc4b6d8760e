/**
 * Config warnings are printed once per network and process: a CNI binary prints a config's
 * warnings on each call (one process per call), a long-lived agent the first time it meets them.
 */
export interface WarnOnce {
  /** The lines of `warnings` not printed yet for `network`; remembers them. */
  fresh(network: string, warnings: readonly string[]): string[];
}

/** At most `limit` (network, line) pairs are remembered; past that the memory starts again (lines may repeat, never lost). */
export function createWarnOnce(limit = 4096): WarnOnce {
  let seen = new Set<string>();
  return {
    fresh(network, warnings) {
      const out: string[] = [];
      for (const line of warnings) {
        const key = `${network}\u0000${line}`;
        if (seen.has(key)) continue;
        if (seen.size >= limit) seen = new Set();
        seen.add(key);
        out.push(line);
      }
      return out;
    },
  };
}

/** The process's own memory (the dispatcher's default). */
export const processWarnings: WarnOnce = createWarnOnce();
