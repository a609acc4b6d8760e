import { createHash } from "node:crypto";
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir } from "@ipamkit/kube-apiserver-launcher";
import { CHART } from "./helm.js";

// test-infra/monitoring's monitoring-check: the Prometheus Operator's objects decoded strictly into
// the operator's own Go types. Its cache path is keyed by the module version and main.go's hash, as
// its build.sh computes them.

const DIR = join(CHART, "..", "..", "test-infra", "monitoring");
export const MONITORING_BUILD_SCRIPT = join(DIR, "build.sh");

export function monitoringCheckBinary(): string {
  const version = /prometheus-operator\/pkg\/apis\/monitoring (v\S+)/.exec(readFileSync(join(DIR, "go.mod"), "utf8"))?.[1];
  const sum = createHash("sha256")
    .update(readFileSync(join(DIR, "main.go")))
    .digest("hex")
    .slice(0, 12);
  const binary = join(cacheDir(), `monitoring-check-${version}-${sum}`, "monitoring-check");
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    throw new Error(`monitoring-check is not built (${binary}): run bash ${MONITORING_BUILD_SCRIPT}`);
  }
  return binary;
}
