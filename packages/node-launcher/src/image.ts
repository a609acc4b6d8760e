import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The built plugin (static binary, agent, Node files) the image takes. */
export const PLUGIN_DIST = join(ROOT, "examples", "cni-plugin", "dist");
/** The built installer and probe the image takes. */
export const INSTALL_DIST = join(ROOT, "examples", "install", "dist");
const BUILD_IMAGE = join(ROOT, "scripts", "build-image.sh");
const PLUGIN_FILES = ["ipamkit", "ipamkit-agent", "ipamkit-node", "ipamkit-kubernetes.cjs", "ipamkit-direct.cjs", "package.json"];
const INSTALL_FILES = ["ipamkit-install", "ipamkit-probe"];

export interface IpamkitImage {
  /** an OCI archive for `ctr images import` */
  readonly archive: string;
  /** the reference inside it, e.g. `localhost/ipamkit:0.1.0` */
  readonly ref: string;
}

/** The chart's appVersion: the image tag the chart names by default. */
export function chartVersion(): string {
  const chart = readFileSync(join(ROOT, "charts", "ipamkit", "Chart.yaml"), "utf8");
  const version = /^appVersion:\s*"?([^"\s]+)"?/m.exec(chart)?.[1];
  if (version === undefined) throw new Error("[node-launcher] charts/ipamkit/Chart.yaml has no appVersion");
  return version;
}

/**
 * ipamkit's OCI image, built by scripts/build-image.sh (buildah, from scratch; ~10 s) from the
 * built plugin and installer — the image an operator pushes. Missing builds fail with the command.
 */
export function buildIpamkitImage(
  dir = mkdtempSync(join(tmpdir(), "ipamkit-node-image-")),
  /** the image reference; default `localhost/ipamkit:<the chart's appVersion>` */
  ref = `localhost/ipamkit:${chartVersion()}`,
): IpamkitImage {
  const missing = [
    ...PLUGIN_FILES.filter((f) => !existsSync(join(PLUGIN_DIST, f))).map((f) => join(PLUGIN_DIST, f)),
    ...INSTALL_FILES.filter((f) => !existsSync(join(INSTALL_DIST, f))).map((f) => join(INSTALL_DIST, f)),
  ];
  if (missing.length > 0)
    throw new Error(
      `[node-launcher] not built: ${missing.join(", ")} — run pnpm turbo run build --filter=@ipamkit/example-cni-plugin --filter=@ipamkit/example-install`,
    );
  const archive = join(dir, "ipamkit.oci.tar");
  try {
    execFileSync("bash", [BUILD_IMAGE, archive], {
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 600_000,
      env: { ...process.env, IPAMKIT_PLUGIN_DIST: PLUGIN_DIST, IPAMKIT_INSTALL_DIST: INSTALL_DIST, IPAMKIT_IMAGE_TAG: ref },
    });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? "").trim();
    throw new Error(`[node-launcher] scripts/build-image.sh failed: ${stderr.slice(-1200) || (error as Error).message}`);
  }
  return { archive, ref };
}
