import { accessSync, constants, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The Go module that builds the binaries: its go.mod pins both versions. */
export const BUILD_MODULE_DIR = fileURLToPath(new URL("../../../test-infra/kube-apiserver/", import.meta.url));
export const BUILD_SCRIPT = join(BUILD_MODULE_DIR, "build.sh");

export interface Binaries {
  /** e.g. `v1.37.2` */
  readonly kubernetesVersion: string;
  /** e.g. `v3.7.0` */
  readonly etcdVersion: string;
  readonly kubeApiserver: string;
  readonly etcd: string;
}

/** `${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}`, as build.sh computes it. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.IPAMKIT_CACHE_DIR) return env.IPAMKIT_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), ".cache"), "ipamkit");
}

/** A module's version as go.mod requires it (`require m vX` or a line of a require block). */
export function requiredVersion(goMod: string, module: string): string | undefined {
  for (const line of goMod.split("\n")) {
    const words = line.trim().split(/\s+/);
    const at = words.indexOf(module);
    const version = at >= 0 ? words[at + 1] : undefined;
    if (version?.startsWith("v") && words[0] !== "tool") return version;
  }
  return undefined;
}

/** Where build.sh puts the binaries, whether or not they are there yet. */
export function binaryPaths(env: NodeJS.ProcessEnv = process.env): Binaries {
  const goMod = readFileSync(join(BUILD_MODULE_DIR, "go.mod"), "utf8");
  const kubernetesVersion = requiredVersion(goMod, "k8s.io/kubernetes");
  const etcdVersion = requiredVersion(goMod, "go.etcd.io/etcd/server/v3");
  if (kubernetesVersion === undefined || etcdVersion === undefined)
    throw new Error(`[kube-apiserver-launcher] ${BUILD_MODULE_DIR}go.mod names no k8s.io/kubernetes or go.etcd.io/etcd/server/v3 version`);
  const cache = cacheDir(env);
  return {
    kubernetesVersion,
    etcdVersion,
    kubeApiserver: join(cache, `kube-apiserver-${kubernetesVersion}`, "kube-apiserver"),
    etcd: join(cache, `etcd-${etcdVersion}`, "etcd"),
  };
}

/** The cached binaries, or an error that says how to build them. Never builds (a cold build takes minutes). */
export function findBinaries(env: NodeJS.ProcessEnv = process.env): Binaries {
  const binaries = binaryPaths(env);
  const missing = [binaries.kubeApiserver, binaries.etcd].filter((path) => {
    try {
      accessSync(path, constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0)
    throw new Error(
      `[kube-apiserver-launcher] not built: ${missing.join(", ")} — run ${BUILD_SCRIPT} once on this machine ` +
        "(Go and the Go module proxy; ~9 min cold on 2 cores). `npm test` runs it before the tests.",
    );
  return binaries;
}
