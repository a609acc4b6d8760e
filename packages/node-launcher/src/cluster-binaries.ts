import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir, requiredVersion } from "@ipamkit/kube-apiserver-launcher";

/** The Go module that builds kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes). */
export const CLUSTER_BUILD_DIR = fileURLToPath(new URL("../../../test-infra/cluster/", import.meta.url));
export const CLUSTER_BUILD_SCRIPT = join(CLUSTER_BUILD_DIR, "build.sh");
/** The Go module that builds Multus' thin plugin. */
export const MULTUS_BUILD_DIR = fileURLToPath(new URL("../../../test-infra/multus/", import.meta.url));
export const MULTUS_BUILD_SCRIPT = join(MULTUS_BUILD_DIR, "build.sh");
const MULTUS_MODULE = "gopkg.in/k8snetworkplumbingwg/multus-cni.v4";

export interface ClusterBinaries {
  readonly versions: { readonly kubernetes: string; readonly multus: string };
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly kubectl: string;
  /** Multus' thin CNI plugin */
  readonly multus: string;
  /** Multus' own deployment manifest (the NetworkAttachmentDefinition CRD is its first object) */
  readonly multusManifest: string;
}

export class ClusterBinariesMissingError extends Error {
  readonly code = "CLUSTER_BINARIES_MISSING";
  constructor(readonly missing: readonly string[]) {
    const scripts = [
      ...(missing.some((m) => !m.includes("/multus-")) ? [CLUSTER_BUILD_SCRIPT] : []),
      ...(missing.some((m) => m.includes("/multus-")) ? [MULTUS_BUILD_SCRIPT] : []),
    ];
    super(
      `[node-launcher] not built: ${missing.join(", ")} — run ${scripts.join(" and ")} once on this machine ` +
        "(Go and the Go module proxy; minutes cold on 2 cores). `npm test` runs them before the tests.",
    );
    this.name = "ClusterBinariesMissingError";
  }
}

function versionOf(dir: string, module: string): string {
  const version = requiredVersion(readFileSync(join(dir, "go.mod"), "utf8"), module);
  if (version === undefined) throw new Error(`[node-launcher] ${dir}go.mod names no ${module} version`);
  return version;
}

/** Where the build scripts put the binaries, whether or not they are there yet. */
export function clusterBinaryPaths(env: NodeJS.ProcessEnv = process.env): ClusterBinaries {
  const kubernetes = versionOf(CLUSTER_BUILD_DIR, "k8s.io/kubernetes");
  const multus = versionOf(MULTUS_BUILD_DIR, MULTUS_MODULE);
  const cache = cacheDir(env);
  const k8s = (cmd: string) => join(cache, `${cmd}-${kubernetes}`, cmd);
  return {
    versions: { kubernetes, multus },
    kubeControllerManager: k8s("kube-controller-manager"),
    kubeScheduler: k8s("kube-scheduler"),
    kubectl: k8s("kubectl"),
    multus: join(cache, `multus-${multus}`, "multus"),
    multusManifest: join(cache, `multus-${multus}`, "multus-daemonset.yml"),
  };
}

const executable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The cached binaries, or a {@link ClusterBinariesMissingError} naming the build commands. Never builds. */
export function findClusterBinaries(env: NodeJS.ProcessEnv = process.env): ClusterBinaries {
  const paths = clusterBinaryPaths(env);
  const missing = [
    ...[paths.kubeControllerManager, paths.kubeScheduler, paths.kubectl, paths.multus].filter((p) => !executable(p)),
    ...(existsSync(paths.multusManifest) ? [] : [paths.multusManifest]),
  ];
  if (missing.length > 0) throw new ClusterBinariesMissingError(missing);
  return paths;
}

/** kubectl as test-infra/cluster/build.sh built it (same release as the suite's kube-apiserver). */
export function kubectlBinary(env: NodeJS.ProcessEnv = process.env): string {
  const { kubectl } = clusterBinaryPaths(env);
  if (!executable(kubectl)) throw new ClusterBinariesMissingError([kubectl]);
  return kubectl;
}
