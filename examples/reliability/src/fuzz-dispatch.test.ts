import { rmSync } from "node:fs";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import fc from "fast-check";
import { afterAll, expect, it } from "vitest";
import { FULL, scale, scratchDir, seed, Tally } from "../test/campaign.js";
import { type CniCase, cniCase } from "../test/cni-input.js";
import { runInProcess, sandboxStores } from "../test/harness.js";
import { describeFailures, judge } from "../test/oracle.js";

// The fuzz campaign of RELIABILITY.md, in-process part: generated CNI invocations (env, stdin,
// flat file) through the real dispatcher on the file store (in a temporary directory) and the
// memory store. Every case must end within the bound as a valid result or one CNI error JSON line.
const CASES = scale(1_000, 12_000);
const CHUNK = 250;
const BOUND_MS = 5_000;
const SEED = seed(20261203);

const sandbox = scratchDir("fuzz");
afterAll(() => rmSync(sandbox, { recursive: true, force: true }));

it(`${CASES} generated CNI invocations through dispatch end as a result or a CNI error, in time (seed ${SEED})`, {
  timeout: FULL ? 3_600_000 : 120_000,
}, async () => {
  const stores = sandboxStores(sandbox);
  const tally = new Tally();
  const shapes = new Tally();
  const failures: { problems: string[]; c: CniCase }[] = [];
  let slowest = 0;
  for (let done = 0, chunk = 0; done < CASES; chunk += 1) {
    const cases = fc.sample(cniCase, { numRuns: Math.min(CHUNK, CASES - done), seed: SEED + chunk });
    for (const [i, c] of cases.entries()) {
      const memory = (done + i) % 2 === 1;
      const outcome = await runInProcess(c, (config) => stores.open(config, memory), BOUND_MS);
      const verdict = judge(c.env.CNI_COMMAND, outcome, BOUND_MS);
      if (outcome.threw !== undefined) verdict.problems.push(`dispatch threw: ${String(outcome.threw)}`);
      slowest = Math.max(slowest, outcome.ms);
      tally.add(verdict.label);
      shapes.add(c.shape);
      if (verdict.problems.length > 0) failures.push({ problems: verdict.problems, c });
    }
    done += cases.length;
  }
  // hostile input never damaged what the stores hold: every pool still reads cleanly
  const file = createFileStore({ dir: join(sandbox, "file-store") });
  let pools = 0;
  for (const store of [file, stores.memory]) {
    for (const ref of await store.listPools()) {
      await store.readPool(ref);
      pools += 1;
    }
  }
  console.log(
    `fuzz (dispatch): ${CASES} cases, seed ${SEED}; outcomes ${tally}; stdin shapes ${shapes}; slowest ${Math.round(slowest)} ms; ${pools} pools read back cleanly; ${failures.length} failures`,
  );
  expect(describeFailures(failures)).toEqual([]);
  expect(tally.total()).toBe(CASES);
  // the campaign reached past validation: some ADDs succeeded and some errors came from the store's side
  expect(tally.get("ok:ADD")).toBeGreaterThan(0);
});
