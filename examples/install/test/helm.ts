import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, requiredVersion } from "@ipamkit/kube-apiserver-launcher";
import { ROOT } from "./image.js";

export const CHART = join(ROOT, "charts", "ipamkit");
const BUILD = join(ROOT, "test-infra", "helm", "build.sh");

/** The helm test-infra/helm/build.sh caches; an error that names the script when it is missing. */
export function helmBinary(): string {
  const version = requiredVersion(readFileSync(join(ROOT, "test-infra", "helm", "go.mod"), "utf8"), "helm.sh/helm/v4");
  if (version === undefined) throw new Error("test-infra/helm/go.mod names no helm.sh/helm/v4 version");
  const helm = join(cacheDir(), `helm-${version}`, "helm");
  try {
    accessSync(helm, constants.X_OK);
  } catch {
    throw new Error(`helm is not built: ${helm} — run ${BUILD} once on this machine (Go and the Go module proxy; npm test runs it)`);
  }
  return helm;
}

/** A rendered Kubernetes object, loosely typed for assertions. */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are checked field by field
  [key: string]: any;
}
