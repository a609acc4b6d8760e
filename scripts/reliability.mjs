#!/usr/bin/env node
// `pnpm reliability`: the reliability campaigns of RELIABILITY.md at full size. `npm test` runs the
// same tests in a bounded form; here RELIABILITY=full scales them up (e.g. 12 000 in-process fuzz
// cases instead of 1 000). Extra arguments go to vitest (a file filter, `-t name`); set
// RELIABILITY_SEED to replay a fuzz run with another seed. Needs `pnpm install` done, and etcd,
// openssl and the kube-apiserver binaries as `npm test` installs them.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const env = { ...process.env, RELIABILITY: "full", TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };

/** The vitest projects holding campaigns, in RELIABILITY.md's order. Part B adds its own here. */
const CAMPAIGNS = [
  { project: "example-reliability", what: "fuzzed CNI input, corrupted stored data, security review (RELIABILITY.md part A)" },
];

function run(cmd, args) {
  console.log(`\n$ ${cmd} ${args.join(" ")}`);
  return spawnSync(cmd, args, { cwd: root, stdio: "inherit", env }).status ?? 1;
}

// the real kube-apiserver of the RBAC check: built once per machine, a no-op when cached
if (run("bash", ["test-infra/kube-apiserver/build.sh"]) !== 0) process.exit(1);
const started = Date.now();
const failed = [];
for (const { project, what } of CAMPAIGNS) {
  console.log(`\n== ${what}`);
  if (run("pnpm", ["vitest", "run", "--project", project, ...process.argv.slice(2)]) !== 0) failed.push(project);
}
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
console.log(
  `\nreliability campaigns: ${CAMPAIGNS.length - failed.length} passed, ${failed.length} failed (${minutes} min)${failed.length > 0 ? `: ${failed.join(", ")}` : ""}`,
);
process.exit(failed.length === 0 ? 0 : 1);
