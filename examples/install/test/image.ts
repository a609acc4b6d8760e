import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/** The repository's root. */
export const ROOT = join(import.meta.dirname, "..", "..", "..");
export const BUILD_IMAGE = join(ROOT, "scripts", "build-image.sh");

/** What the image tests need on this machine; a missing tool fails with the command that installs it. */
export function requireImageTools(): void {
  if (process.getuid?.() !== 0) throw new Error("the image tests need root (buildah's vfs storage, chroot, mount namespaces)");
  const missing = ["buildah", "umoci", "skopeo", "unshare"].filter((tool) => spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0);
  if (missing.length > 0)
    throw new Error(
      `missing ${missing.join(", ")}: apt-get install -y buildah umoci skopeo util-linux (node scripts/run.mjs test installs them)`,
    );
}

export interface BuiltImage {
  archive: string;
  /** The unpacked root file system (umoci unpack). */
  rootfs: string;
  buildMs: number;
}

/**
 * Builds the image with scripts/build-image.sh into `dir` from the run's built files (`dists`: its
 * own copies, so that no dist/ another test runs from is rebuilt meanwhile) and unpacks it with umoci.
 */
export function buildAndUnpack(dir: string, dists: { plugin: string; install: string }): BuiltImage {
  const archive = join(dir, "ipamkit.oci.tar");
  const started = Date.now();
  execFileSync("bash", [BUILD_IMAGE, archive], {
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 600_000,
    env: { ...process.env, IPAMKIT_PLUGIN_DIST: dists.plugin, IPAMKIT_INSTALL_DIST: dists.install },
  });
  const buildMs = Date.now() - started;
  const layout = join(dir, "layout");
  mkdirSync(layout);
  execFileSync("tar", ["-xf", archive, "-C", layout]);
  const tag = execFileSync("umoci", ["ls", "--layout", layout], { encoding: "utf8" }).trim();
  execFileSync("umoci", ["unpack", "--image", `${layout}:${tag}`, join(dir, "bundle")], { stdio: "pipe" });
  return { archive, rootfs: join(dir, "bundle", "rootfs"), buildMs };
}

/**
 * argv that runs `command` chrooted into `rootfs`, in a mount namespace of its own where each
 * `[outside, inside]` pair is bind-mounted — as a pod's hostPath volumes are. The mounts go away
 * with the process (unshare execs, so the process spawned is the command itself).
 */
export function inImage(rootfs: string, mounts: ReadonlyArray<readonly [string, string]>, command: readonly string[]): string[] {
  const script = [
    "set -e",
    'root="$1"; n="$2"; shift 2',
    'for i in $(seq 1 "$n"); do mkdir -p "$root$2"; mount --bind "$1" "$root$2"; shift 2; done',
    'exec chroot "$root" "$@"',
  ].join("\n");
  return [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    script,
    "in-image",
    rootfs,
    String(mounts.length),
    ...mounts.flat(),
    ...command,
  ];
}
