#!/usr/bin/env node
// The two Quick-start commands: `npm run demo` and `npm test` call this with "demo" or "test".
// It needs only Node 20 and npm: it installs pnpm and every dependency, then does the job.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PNPM = "10.34.9";
const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };

function run(cmd, args, options = {}) {
  console.log(`\n$ ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", env, ...options });
  return r.status ?? 1;
}

function must(cmd, args) {
  const status = run(cmd, args);
  if (status !== 0) {
    console.error(`\n${cmd} ${args.join(" ")} failed (exit ${status})`);
    process.exit(status);
  }
}

function ensurePnpm() {
  const r = spawnSync("pnpm", ["--version"], { encoding: "utf8", env });
  if (r.status === 0 && r.stdout.trim() === PNPM) return;
  must("npm", ["install", "--global", `pnpm@${PNPM}`]);
}

/**
 * Debian packages the tests use for real: etcd (etcd-server, etcd-client), openssl for throw-away
 * TLS certificates, the CNI reference plugins (bridge, macvlan, host-local in /usr/lib/cni) and
 * iproute2 for the end-to-end tests in network namespaces, gcc and the static C library for the
 * native CNI forwarder (examples/cni-plugin/src/forwarder.c, linked with musl from musl-tools) and
 * the simulation's process launcher (examples/cluster-sim/src/launcher.c), buildah, umoci, skopeo
 * and unshare for the OCI image and its test (examples/install/src/image.test.ts), clang with its
 * sanitizer and libFuzzer runtimes (libclang-rt-dev) and llvm (llvm-cov, llvm-profdata) for the
 * forwarder's fuzz target and differential reader (examples/cni-plugin/src/forwarder-fuzz.test.ts,
 * forwarder-differential.test.ts).
 */
function ensureDebianPackages() {
  const missing = [
    ["command -v etcd", "etcd-server"],
    ["command -v etcdctl", "etcd-client"],
    ["command -v openssl", "openssl"],
    ["test -x /usr/lib/cni/bridge && test -x /usr/lib/cni/macvlan && test -x /usr/lib/cni/host-local", "containernetworking-plugins"],
    ["command -v ip", "iproute2"],
    ["command -v cc", "gcc"],
    ['cc -print-file-name=libc.a | grep -q / && test -f "$(cc -print-file-name=libc.a)"', "libc6-dev"],
    ["command -v musl-gcc", "musl-tools"],
    // the forwarder's fuzz target (libFuzzer, ASan, UBSan) and its coverage report
    ["command -v clang", "clang"],
    [
      "printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' | clang -x c -fsanitize=fuzzer,address,undefined -o /dev/null -",
      "libclang-rt-dev",
    ],
    ["command -v llvm-cov && command -v llvm-profdata", "llvm"],
    // the OCI image (scripts/build-image.sh) and its test: build, read back, unpack, run chrooted
    ["command -v buildah", "buildah"],
    ["command -v umoci", "umoci"],
    ["command -v skopeo", "skopeo"],
    ["command -v unshare", "util-linux"],
    // the real node's OCI runtime (packages/node-launcher; containerd and kubelet: test-infra/node)
    ["command -v runc || test -x /usr/sbin/runc", "runc"],
    ["command -v spin", "spin"],
  ].filter(([check]) => spawnSync("sh", ["-c", check]).status !== 0);
  if (missing.length === 0) return;
  const packages = missing.map(([, pkg]) => pkg);
  if (process.getuid?.() !== 0) {
    console.error(`missing Debian packages: ${packages.join(" ")} — install them with: sudo apt-get install -y ${packages.join(" ")}`);
    process.exit(1);
  }
  must("apt-get", ["update"]);
  must("apt-get", ["install", "-y", "--no-install-recommends", ...packages]);
}

function install() {
  ensurePnpm();
  must("pnpm", ["install", "--frozen-lockfile"]);
}

const job = process.argv[2];
if (job === "demo") {
  install();
  must("pnpm", ["turbo", "run", "build", "--filter=@ipamkit/example-demo..."]);
  must("node", ["examples/demo/dist/main.js"]);
} else if (job === "test") {
  install();
  ensureDebianPackages();
  // The real kube-apiserver and etcd the Kubernetes suites also run on: built from the Go module
  // proxy once per machine (~9 min cold on 2 cores), cached outside the repository; a no-op after.
  const checks = [
    ["kube-apiserver binaries", ["bash", "test-infra/kube-apiserver/build.sh"]],
    ["helm binary", ["bash", "test-infra/helm/build.sh"]],
    ["Prometheus Operator types check", ["bash", "test-infra/monitoring/build.sh"]],
    ["Whereabouts binary", ["bash", "test-infra/whereabouts/build.sh"]],
    ["real node binaries", ["bash", "test-infra/node/build.sh"]],
    // the real cluster's control plane (kube-controller-manager, kube-scheduler, kubectl) and Multus
    ["cluster binaries", ["bash", "test-infra/cluster/build.sh"]],
    ["Multus binary", ["bash", "test-infra/multus/build.sh"]],
    ["build", ["turbo", "run", "build"]],
    ["exports", ["node", "scripts/check-exports.mjs"]],
    ["API reference (TypeDoc)", ["node", "scripts/api-docs.mjs"]],
    ["typecheck", ["turbo", "run", "typecheck"]],
    ["lint", ["biome", "check", "."]],
  ];
  let failedChecks = 0;
  for (const [name, args] of checks) {
    const status = args[0] === "node" || args[0] === "bash" ? run(args[0], args.slice(1)) : run("pnpm", args);
    if (status !== 0) {
      failedChecks += 1;
      console.error(`check failed: ${name}`);
    }
  }
  const reportDir = mkdtempSync(join(tmpdir(), "ipamkit-vitest-"));
  const report = join(reportDir, "report.json");
  const status = run("pnpm", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`]);
  let passed = 0;
  let failed = 0;
  try {
    const json = JSON.parse(readFileSync(report, "utf8"));
    passed = json.numPassedTests;
    failed = json.numFailedTests + (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
  } catch {
    failed += 1;
  }
  rmSync(reportDir, { recursive: true, force: true });
  if (status !== 0 && failed === 0) failed = 1;
  console.log(`\nstatic checks: ${checks.length - failedChecks} passed, ${failedChecks} failed`);
  console.log(`${passed + checks.length - failedChecks} passed, ${failed + failedChecks} failed`);
  process.exit(failed + failedChecks === 0 ? 0 : 1);
} else {
  console.error("usage: node scripts/run.mjs demo|test");
  process.exit(2);
}
