import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheDir } from "@ipamkit/kube-apiserver-launcher";

export const PAUSE_SOURCE = fileURLToPath(new URL("./pause.c", import.meta.url));

export interface PauseImage {
  /** an OCI archive for `ctr images import` */
  readonly archive: string;
  /** the reference inside it, e.g. `localhost/ipamkit-pause:3f2a…` */
  readonly ref: string;
}

function must(command: string, args: readonly string[], cwd?: string): string {
  const r = spawnSync(command, args, { cwd, encoding: "utf8" });
  if (r.status !== 0)
    throw new Error(
      `[node-launcher] ${command} ${args.join(" ")} failed (${r.error?.message ?? r.status}): ${r.stderr.trim().slice(-800)}`,
    );
  return r.stdout.trim();
}

/**
 * The pod sandbox image: pause.c linked statically (gcc -static) into an image built `from scratch`
 * with buildah (vfs storage in a temporary dir), written as an OCI archive. Cached in the ipamkit
 * cache dir under the source's hash: built once per machine, in ~2 s.
 */
export function pauseImage(env: NodeJS.ProcessEnv = process.env): PauseImage {
  const hash = createHash("sha256").update(readFileSync(PAUSE_SOURCE)).digest("hex").slice(0, 12);
  const ref = `localhost/ipamkit-pause:${hash}`;
  const dir = join(cacheDir(env), `pause-${hash}`);
  const archive = join(dir, "pause.oci.tar");
  if (existsSync(archive)) return { archive, ref };
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "ipamkit-pause-"));
  const buildah = ["--root", join(work, "storage"), "--runroot", join(work, "run"), "--storage-driver", "vfs"];
  let ctr = "";
  try {
    must("gcc", ["-static", "-Os", "-s", "-o", join(work, "pause"), PAUSE_SOURCE]);
    ctr = must("buildah", [...buildah, "from", "scratch"]);
    must("buildah", [...buildah, "copy", ctr, join(work, "pause"), "/pause"]);
    must("buildah", [...buildah, "config", "--entrypoint", '["/pause"]', ctr]);
    const tmp = `${archive}.tmp.${process.pid}`;
    must("buildah", [...buildah, "commit", "--format", "oci", ctr, `oci-archive:${tmp}:${ref}`]);
    renameSync(tmp, archive);
    return { archive, ref };
  } finally {
    if (ctr) spawnSync("buildah", [...buildah, "rm", ctr]);
    rmSync(work, { recursive: true, force: true });
  }
}
