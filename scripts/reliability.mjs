#!/usr/bin/env node
// `pnpm reliability [campaign…]`: the reliability campaigns of RELIABILITY.md at full size. `npm test`
// runs the same tests in a bounded form; here RELIABILITY=full scales them up (e.g. 12 000 in-process
// fuzz cases instead of 1 000, 400 model-based runs instead of 6, 110 kills per store instead of 12).
// Name campaigns to run only those; set RELIABILITY_SEED to replay a fuzz run with another seed.
// Needs `pnpm install` done, and etcd, openssl and the kube-apiserver binaries as `npm test` installs them.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const env = { ...process.env, RELIABILITY: "full", TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };

const MODEL = ["-t", "model-based random operation sequences"];
/** Each campaign: vitest runs (a project and its filters), in RELIABILITY.md's order. */
const CAMPAIGNS = {
  fuzz: [
    { project: "example-reliability", args: ["src/fuzz-dispatch", "src/fuzz-binary"] },
    // the static forwarder's parsers: libFuzzer under ASan and UBSan for 600 s (FUZZ_SECONDS), and
    // the C reader against the TypeScript one on 100 000 generated configs
    { project: "example-cni-plugin", args: ["src/forwarder-fuzz", "src/forwarder-differential"] },
  ],
  corruption: [{ project: "example-reliability", args: ["src/corruption"] }],
  security: [{ project: "example-reliability", args: ["src/file-modes", "src/secrets", "src/tls", "src/rbac"] }],
  model: ["storage-conformance", "storage-file", "storage-etcd", "storage-kubernetes"].map((project) => ({ project, args: MODEL })),
  kill: [{ project: "example-cluster-sim", args: ["src/kill-campaign"] }],
  outage: [{ project: "example-cluster-sim", args: ["src/outage"] }],
  // the spin model of the protocol at full size and the link at 30 000 schedules (RELIABILITY.md)
  protocol: [{ project: "core", args: ["src/protocol-model", "src/protocol-link"] }],
};

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in CAMPAIGNS));
if (unknown.length > 0) {
  console.error(`unknown campaign ${unknown.join(", ")}; campaigns: ${Object.keys(CAMPAIGNS).join(", ")}`);
  process.exit(2);
}
const names = asked.length > 0 ? asked : Object.keys(CAMPAIGNS);

function run(cmd, args) {
  console.log(`\n$ ${cmd} ${args.join(" ")}`);
  return spawnSync(cmd, args, { cwd: root, stdio: "inherit", env }).status ?? 1;
}

// the real kube-apiserver (RBAC check, model runs): built once per machine, a no-op when cached
if (run("bash", ["test-infra/kube-apiserver/build.sh"]) !== 0) process.exit(1);
const started = Date.now();
const failed = new Set();
for (const name of names) {
  console.log(`\n== campaign ${name}`);
  for (const { project, args } of CAMPAIGNS[name]) {
    if (run("pnpm", ["vitest", "run", "--project", project, ...args]) !== 0) failed.add(name);
  }
}
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
const failures = failed.size > 0 ? `: ${[...failed].join(", ")}` : "";
console.log(`\nreliability campaigns: ${names.length - failed.size} passed, ${failed.size} failed (${minutes} min)${failures}`);
process.exit(failed.size === 0 ? 0 : 1);
