import { accessSync, constants, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir, requiredVersion } from "./binaries.js";

/** The Go module that builds Whereabouts' CNI binary: its go.mod pins the Whereabouts version. */
export const WHEREABOUTS_MODULE_DIR = fileURLToPath(new URL("../../../test-infra/whereabouts/", import.meta.url));
export const WHEREABOUTS_BUILD_SCRIPT = join(WHEREABOUTS_MODULE_DIR, "build.sh");
export const WHEREABOUTS_MODULE = "github.com/k8snetworkplumbingwg/whereabouts";

/** Whereabouts' own CRD files, as build.sh copies them from the module's doc/crds. */
export interface WhereaboutsCrds {
  readonly ippools: string;
  readonly overlappingRangeIPReservations: string;
  readonly nodeSlicePools: string;
}

export interface WhereaboutsBuild {
  /** e.g. `v0.9.2` */
  readonly version: string;
  /** Whereabouts' CNI binary (`…/whereabouts-<version>/whereabouts`). */
  readonly binary: string;
  /** Whereabouts' pod controller and reconciler, `ip-control-loop` (`…/whereabouts-<version>/ip-control-loop`). */
  readonly controlLoop: string;
  /** Whereabouts' install manifest (`doc/crds/daemonset-install.yaml`: RBAC, ConfigMap, DaemonSet). */
  readonly installManifest: string;
  /** The folder of the CRD files (`…/whereabouts-<version>/crds`). */
  readonly crdDir: string;
  readonly crds: WhereaboutsCrds;
}

/** Where build.sh puts Whereabouts' binary and CRDs, whether or not they are there yet. */
export function whereaboutsPaths(env: NodeJS.ProcessEnv = process.env): WhereaboutsBuild {
  const goMod = readFileSync(join(WHEREABOUTS_MODULE_DIR, "go.mod"), "utf8");
  const version = requiredVersion(goMod, WHEREABOUTS_MODULE);
  if (version === undefined)
    throw new Error(`[kube-apiserver-launcher] ${WHEREABOUTS_MODULE_DIR}go.mod names no ${WHEREABOUTS_MODULE} version`);
  const dir = join(cacheDir(env), `whereabouts-${version}`);
  const crdDir = join(dir, "crds");
  const crd = (plural: string) => join(crdDir, `whereabouts.cni.cncf.io_${plural}.yaml`);
  return {
    version,
    binary: join(dir, "whereabouts"),
    controlLoop: join(dir, "ip-control-loop"),
    installManifest: join(dir, "daemonset-install.yaml"),
    crdDir,
    crds: {
      ippools: crd("ippools"),
      overlappingRangeIPReservations: crd("overlappingrangeipreservations"),
      nodeSlicePools: crd("nodeslicepools"),
    },
  };
}

/**
 * The cached Whereabouts binary and CRDs, or an error that names the command to build them.
 * Never builds (a cold build takes minutes).
 */
export function findWhereabouts(env: NodeJS.ProcessEnv = process.env): WhereaboutsBuild {
  const build = whereaboutsPaths(env);
  const missing: string[] = [];
  for (const binary of [build.binary, build.controlLoop]) {
    try {
      accessSync(binary, constants.X_OK);
    } catch {
      missing.push(binary);
    }
  }
  if (!existsSync(build.installManifest)) missing.push(build.installManifest);
  // build.sh marks a complete copy of the CRDs; a half-copied folder counts as missing
  if (!existsSync(join(build.crdDir, ".complete"))) missing.push(`${build.crdDir}/`);
  else for (const file of Object.values(build.crds)) if (!existsSync(file)) missing.push(file);
  if (missing.length > 0)
    throw new Error(
      `[kube-apiserver-launcher] Whereabouts ${build.version} not built: ${missing.join(", ")} — run ${WHEREABOUTS_BUILD_SCRIPT} once on this machine ` +
        "(Go and the Go module proxy; ~2 min cold on 2 cores). `npm test` runs it before the tests.",
    );
  return build;
}

/** Every CRD file of the Whereabouts build (for `startKubeApiserver({ crds })`). */
export function whereaboutsCrdFiles(build: WhereaboutsBuild): string[] {
  return readdirSync(build.crdDir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(build.crdDir, f));
}
