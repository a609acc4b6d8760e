import { execFileSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir, requiredVersion } from "@ipamkit/kube-apiserver-launcher";
import { type KubernetesObject, loadAllYaml } from "@kubernetes/client-node";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CHART = join(ROOT, "charts", "ipamkit");
export const HELM_BUILD_SCRIPT = join(ROOT, "test-infra", "helm", "build.sh");

/** The helm test-infra/helm/build.sh caches; an error that names the script when it is missing. */
export function helmBinary(): string {
  const version = requiredVersion(readFileSync(join(ROOT, "test-infra", "helm", "go.mod"), "utf8"), "helm.sh/helm/v4");
  if (version === undefined) throw new Error("test-infra/helm/go.mod names no helm.sh/helm/v4 version");
  const helm = join(cacheDir(), `helm-${version}`, "helm");
  try {
    accessSync(helm, constants.X_OK);
  } catch {
    throw new Error(
      `helm is not built: ${helm} — run ${HELM_BUILD_SCRIPT} once on this machine (Go and the Go module proxy; npm test runs it)`,
    );
  }
  return helm;
}

/** `helm template` of ipamkit's chart with `values` (strings `--set-string`, booleans and numbers `--set`), parsed. */
export function renderChart(options: {
  release: string;
  namespace: string;
  values: Record<string, string | boolean | number>;
}): KubernetesObject[] {
  const sets = Object.entries(options.values).flatMap(([k, v]) => [typeof v === "string" ? "--set-string" : "--set", `${k}=${v}`]);
  const yaml = execFileSync(helmBinary(), ["template", options.release, CHART, "--namespace", options.namespace, ...sets], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return loadAllYaml(yaml) as KubernetesObject[];
}
