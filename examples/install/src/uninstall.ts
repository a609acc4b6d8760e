import { lstatSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { attachmentsUsing, type CachedAttachment } from "./cni-cache.js";
import { copyFileAtomic } from "./install-files.js";
import { type ConfigFile, type InstallOptions, NODE_CACHES, NODE_FILES, renderConfig, writeConfig } from "./install-run.js";

// Taking ipamkit off a host (the chart's cni.uninstall; `ipamkit-install --uninstall`). Safe by
// construction: nothing is removed while the runtime's CNI cache holds an attachment that uses
// ipamkit (its DEL needs the binary, the flat file and the kubeconfig), a file is removed only
// when it is still exactly what this installer put there (a Whereabouts binary put back under
// the same name is left), and when an attachment appears while the files go, they are put back.

export interface UninstallOptions extends InstallOptions {
  /** The runtimes' CNI result caches, as host paths (`/var/lib/cni/results`, …). */
  cniCacheDirs: readonly string[];
}

export interface UninstallReport {
  /** Files removed (paths as this process sees them). */
  removed: string[];
  /** Files left, each with the reason. */
  kept: { path: string; why: string }[];
  /** Attachments that use ipamkit: with any, nothing is removed. */
  inUse: CachedAttachment[];
  /** Files written back because an attachment appeared while they were removed. */
  restored: string[];
}

const onHost = (options: InstallOptions, path: string) => join(options.hostRoot, path);

/** The bytes at `path` when it is a regular file (not a link), else undefined. */
function regularFile(path: string): Buffer | undefined {
  try {
    return lstatSync(path).isFile() ? readFileSync(path) : undefined;
  } catch {
    return undefined;
  }
}

/** The binaries and Node files this installer puts into the bin dir, each with the source it copies. */
function installedBinaries(options: InstallOptions): { path: string; source: string }[] {
  const binDir = onHost(options, options.cniBinDir);
  const named = options.binaryNames.map((name) => ({ path: join(binDir, name), source: join(options.source, "ipamkit") }));
  const node = [...NODE_FILES, ...NODE_CACHES].map((name) => ({ path: join(binDir, name), source: join(options.source, name) }));
  return [...named, ...node];
}

/** Removes `path` when its bytes are `expected`; records why not otherwise. A missing file is skipped. */
function removeIfOurs(path: string, expected: Buffer | undefined, report: UninstallReport): void {
  const current = regularFile(path);
  if (current === undefined) {
    if (lstatExists(path)) report.kept.push({ path, why: "not a regular file" });
    return;
  }
  if (expected === undefined || !current.equals(expected)) {
    report.kept.push({ path, why: "not what ipamkit's installer wrote (changed or another program's)" });
    return;
  }
  rmSync(path, { force: true });
  report.removed.push(path);
}

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Removes the whereabouts.d directory when nothing else is left in it. */
function removeEmptyDir(dir: string, report: UninstallReport): void {
  try {
    if (readdirSync(dir).length > 0) return;
    rmdirSync(dir);
    report.removed.push(dir);
  } catch {
    // absent, or filled meanwhile
  }
}

/** Writes back the removed files among `binaries` and `config` (the directory is recreated by writeConfig). */
function restore(removed: readonly string[], binaries: { path: string; source: string }[], config: ConfigFile[]): string[] {
  const gone = new Set(removed);
  const restored: string[] = [];
  for (const { path, source } of binaries) {
    if (!gone.has(path)) continue;
    const mode = basename(path).endsWith(".cjs") || basename(path).endsWith(".v8cache") ? 0o644 : 0o755;
    copyFileAtomic(source, path, mode);
    restored.push(path);
  }
  const files = config.filter((file) => gone.has(file.path));
  writeConfig(files);
  restored.push(...files.map((file) => file.path));
  return restored;
}

/** Takes ipamkit's files off the host unless an attachment still uses them; see the file comment. `scan` reads the caches (a test's stand-in may answer differently on the second look). */
export function uninstall(options: UninstallOptions, scan: typeof attachmentsUsing = attachmentsUsing): UninstallReport {
  const report: UninstallReport = { removed: [], kept: [], inUse: [], restored: [] };
  const cacheDirs = options.cniCacheDirs.map((dir) => onHost(options, dir));
  const binaries = installedBinaries(options);
  let config: ConfigFile[] | undefined;
  let configError: string | undefined;
  try {
    config = renderConfig(options);
  } catch (error) {
    configError = (error as Error).message;
  }
  const everything = [...binaries.map((b) => b.path), ...(config ?? []).map((f) => f.path)];

  report.inUse = scan(cacheDirs, options.binaryNames);
  if (report.inUse.length > 0) {
    const why = `in use by ${report.inUse.length} attachment(s) in the CNI cache`;
    for (const path of everything) if (lstatExists(path)) report.kept.push({ path, why });
    return report;
  }

  for (const { path, source } of binaries) removeIfOurs(path, regularFile(source), report);
  if (config === undefined) {
    report.kept.push({ path: onHost(options, join(options.cniConfDir, "whereabouts.d")), why: `cannot render the config: ${configError}` });
  } else {
    for (const file of config) removeIfOurs(file.path, Buffer.from(file.content), report);
    const dir = config[0] === undefined ? undefined : dirname(config[0].path);
    if (dir !== undefined) removeEmptyDir(dir, report);
  }

  // an ADD that finished while the files went: put them back, its DEL will need them
  const appeared = scan(cacheDirs, options.binaryNames);
  if (appeared.length > 0 && report.removed.length > 0) {
    report.inUse = appeared;
    report.restored = restore(report.removed, binaries, config ?? []);
  }
  return report;
}
