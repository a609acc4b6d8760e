import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir, requiredVersion } from "@ipamkit/kube-apiserver-launcher";

/** The Go modules that build the node's binaries (one per part, each pinning its version). */
export const NODE_BUILD_DIR = fileURLToPath(new URL("../../../test-infra/node/", import.meta.url));
export const NODE_BUILD_SCRIPT = join(NODE_BUILD_DIR, "build.sh");
/** runc comes from Debian (`apt-get install -y runc`; scripts/run.mjs installs it). */
export const RUNC_CANDIDATES = ["/usr/sbin/runc", "/usr/bin/runc"];

export interface NodeBinaries {
  readonly versions: { readonly kubelet: string; readonly containerd: string; readonly crictl: string; readonly cniPlugins: string };
  readonly kubelet: string;
  readonly containerd: string;
  readonly shim: string;
  readonly ctr: string;
  readonly crictl: string;
  /** the folder of the CNI reference plugins (bridge, macvlan, loopback, host-local, portmap) */
  readonly cniPluginDir: string;
  readonly runc: string;
}

export class NodeBinariesMissingError extends Error {
  readonly code = "NODE_BINARIES_MISSING";
  constructor(readonly missing: readonly string[]) {
    super(
      `[node-launcher] not built: ${missing.join(", ")} — run ${NODE_BUILD_SCRIPT} once on this machine ` +
        "(Go and the Go module proxy; ~7 min cold on 2 cores; runc: apt-get install -y runc). `npm test` runs it before the tests.",
    );
    this.name = "NodeBinariesMissingError";
  }
}

function versionOf(part: string, module: string): string {
  const goMod = readFileSync(join(NODE_BUILD_DIR, part, "go.mod"), "utf8");
  const version = requiredVersion(goMod, module);
  if (version === undefined) throw new Error(`[node-launcher] ${NODE_BUILD_DIR}${part}/go.mod names no ${module} version`);
  return version;
}

const executable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** Where build.sh puts the binaries, whether or not they are there yet. */
export function nodeBinaryPaths(env: NodeJS.ProcessEnv = process.env): NodeBinaries {
  const versions = {
    kubelet: versionOf("kubelet", "k8s.io/kubernetes"),
    containerd: versionOf("containerd", "github.com/containerd/containerd/v2"),
    crictl: versionOf("crictl", "sigs.k8s.io/cri-tools"),
    cniPlugins: versionOf("cni-plugins", "github.com/containernetworking/plugins"),
  };
  const cache = cacheDir(env);
  const containerd = join(cache, `containerd-${versions.containerd}`);
  return {
    versions,
    kubelet: join(cache, `kubelet-${versions.kubelet}`, "kubelet"),
    containerd: join(containerd, "containerd"),
    shim: join(containerd, "containerd-shim-runc-v2"),
    ctr: join(containerd, "ctr"),
    crictl: join(cache, `crictl-${versions.crictl}`, "crictl"),
    cniPluginDir: join(cache, `cni-plugins-${versions.cniPlugins}`),
    runc: RUNC_CANDIDATES.find(executable) ?? RUNC_CANDIDATES[0] ?? "runc",
  };
}

/** The cached binaries, or a {@link NodeBinariesMissingError} naming the build command. Never builds. */
export function findNodeBinaries(env: NodeJS.ProcessEnv = process.env): NodeBinaries {
  const paths = nodeBinaryPaths(env);
  const wanted = [
    paths.kubelet,
    paths.containerd,
    paths.shim,
    paths.ctr,
    paths.crictl,
    ...["bridge", "macvlan", "loopback", "host-local", "portmap"].map((p) => join(paths.cniPluginDir, p)),
    paths.runc,
  ];
  const missing = wanted.filter((path) => !executable(path));
  if (missing.length > 0) throw new NodeBinariesMissingError(missing);
  return paths;
}
