import { describe, expect, it } from "vitest";
import { parseModelRun, replayModelRun } from "./protocol-link.replay.fixtures.js";
import { simulateModel } from "./protocol-spin.fixtures.js";

/**
 * The model checks the code, not only itself: random runs of the protocol model (spin's
 * simulator, fixed seeds) replayed against the real code as schedules. At every step the code
 * must hold the very request the model makes next (same kind, same pool, claim or pod), get the
 * same answer (done, refused, or of unknown outcome), leave the stores as the model prints them
 * after each write, and keep the model's invariants; its ADDs answer what the model's answer,
 * and after the last pass nothing is left that no live attachment owns. A step of the model
 * the code does not take (or takes differently) fails as a Divergence: the DESIGN.md table's
 * mapping of model steps to functions, checked by behaviour.
 */

const FULL = process.env.RELIABILITY === "full";
const SEEDS = FULL ? 60 : 4;

/** Configurations whose runs the code can follow request by request: FENCE_ALL (the code always fences its choice). */
const CONFIGS: string[][] = [
  ["-DTWO_NODES", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2"],
  ["-DSAME_NODE", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2", "-DREADD"],
  ["-DOVERLAP", "-DFENCE_ALL", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2"],
  ["-DSAME_KEY", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2"],
  ["-DSAME_NODE", "-DFENCE_ALL", "-DUNKNOWN=1", "-DCRASH=0", "-DNPASS=1", "-DMAYDEL=2", "-DREADD"],
  ["-DOVERLAP", "-DFENCE_ALL", "-DUNKNOWN=1", "-DCRASH=1", "-DNPASS=2", "-DMAYDEL=2", "-DMAXTRY=3"],
  ["-DTWO_NODES", "-DREBORN", "-DFENCE_ALL", "-DUNKNOWN=1", "-DCRASH=1", "-DNPASS=1", "-DMAYDEL=2"],
];

describe("random runs of the protocol model are runs of the code", () => {
  for (const defines of CONFIGS) {
    it(`${defines.join(" ")}: ${SEEDS} seeds`, { timeout: FULL ? 3_600_000 : 120_000 }, async () => {
      let requests = 0;
      for (let seed = 1; seed <= SEEDS; seed++) {
        const steps = parseModelRun(simulateModel(defines, seed));
        expect(steps.at(-1), `seed ${seed}: the model's run did not end with its last pass`).toEqual({ kind: "end" });
        await replayModelRun(steps, defines).catch((error: unknown) => {
          throw new Error(`seed ${seed}: ${(error as Error).message}`, { cause: error });
        });
        requests += steps.filter((s) => s.kind === "request").length;
      }
      expect(requests).toBeGreaterThan(SEEDS * 20);
    });
  }
});
