import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  apiServerUrl,
  CONF_SUBDIR,
  FLAT_FILE,
  KUBECONFIG_FILE,
  NODENAME_FILE,
  readServiceAccount,
  renderFlatFile,
  renderKubeconfig,
} from "./install-config.js";
import { copyFileAtomic, InstallError, removeStaleTempFiles, type WriteOutcome, writeFileAtomic } from "./install-files.js";

// The installer's two jobs (the DaemonSet's init container runs both once; its watcher container
// runs syncConfig every second): put the plugin into the host's CNI bin directory, and write the
// flat file, nodename and kubeconfig into <cni conf dir>/whereabouts.d — the kubeconfig again
// whenever the projected ServiceAccount token or CA changes, as Whereabouts' token-watcher.sh does.

/** The plugin's Node files (direct mode, for hosts that have Node 20): optional, with --node-files. */
export const NODE_FILES = ["ipamkit-node", "ipamkit-direct.cjs", "ipamkit-etcd.cjs", "ipamkit-kubernetes.cjs"] as const;
/** V8 code caches installed beside their bundles when the source has them. */
export const NODE_CACHES = ["ipamkit-etcd.cjs.v8cache", "ipamkit-kubernetes.cjs.v8cache"] as const;

export interface InstallOptions {
  /** The directory holding `ipamkit` (and the Node files): the image's dist. */
  source: string;
  /** Where the host's root is mounted ("/host" in the pod; "/" on the host itself). */
  hostRoot: string;
  /** The host's CNI bin directory, as the host sees it. */
  cniBinDir: string;
  /** The host's CNI config directory, as the host sees it; the files go to its whereabouts.d. */
  cniConfDir: string;
  /** Names the static binary is installed under (`ipamkit`, `whereabouts` for a drop-in). */
  binaryNames: readonly string[];
  /** Also install the Node files (direct mode on hosts with Node). */
  nodeFiles: boolean;
  datastore: "kubernetes" | "etcd" | "file";
  /** Extra flat-file keys (agent_socket, etcd_* …). */
  extra: Record<string, unknown>;
  /** reconciler_cron_expression in the flat file (only for Whereabouts' reconciler); unset: not written. */
  reconcilerCron: string | undefined;
  /** The kubeconfig context's namespace; default WHEREABOUTS_NAMESPACE, else the pod's, else kube-system. */
  namespace: string | undefined;
  /** The projected ServiceAccount directory (token, ca.crt, namespace). */
  serviceAccountDir: string;
  /** Written to whereabouts.d/nodename when set. */
  nodeName: string | undefined;
  env: NodeJS.ProcessEnv;
}

export type Outcomes = Record<string, WriteOutcome>;

const onHost = (options: InstallOptions, path: string) => join(options.hostRoot, path);

function ensureDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new InstallError("TARGET_NOT_WRITABLE", `cannot create ${path}: ${(error as Error).message}`);
  }
}

/** Copies the binary under each name and, with `nodeFiles`, the Node files into the host's CNI bin dir. */
export function installBinaries(options: InstallOptions): Outcomes {
  const binDir = onHost(options, options.cniBinDir);
  ensureDir(binDir);
  removeStaleTempFiles(binDir);
  const outcomes: Outcomes = {};
  const binary = join(options.source, "ipamkit");
  for (const name of options.binaryNames) outcomes[join(binDir, name)] = copyFileAtomic(binary, join(binDir, name), 0o755);
  if (options.nodeFiles) {
    for (const name of NODE_FILES) {
      const mode = name === "ipamkit-node" ? 0o755 : 0o644;
      outcomes[join(binDir, name)] = copyFileAtomic(join(options.source, name), join(binDir, name), mode);
    }
    for (const name of NODE_CACHES) {
      if (existsSync(join(options.source, name)))
        outcomes[join(binDir, name)] = copyFileAtomic(join(options.source, name), join(binDir, name), 0o644);
    }
  }
  return outcomes;
}

/** The kubeconfig's namespace: the option, WHEREABOUTS_NAMESPACE, the pod's namespace, kube-system. */
export function poolNamespace(options: InstallOptions, podNamespace: string | undefined): string {
  return options.namespace || options.env.WHEREABOUTS_NAMESPACE || podNamespace || "kube-system";
}

/** A file of whereabouts.d, rendered. */
export interface ConfigFile {
  path: string;
  content: string;
  mode: number;
}

/**
 * The flat file, nodename (when known) and, for the Kubernetes store, the kubeconfig from the
 * ServiceAccount files — rendered, nothing written: a missing token or environment fails here,
 * before the installer has touched the host.
 */
export function renderConfig(options: InstallOptions): ConfigFile[] {
  const hostDir = join(options.cniConfDir, CONF_SUBDIR);
  const dir = onHost(options, hostDir);
  const files: ConfigFile[] = [];
  if (options.datastore === "kubernetes") {
    const serviceAccount = readServiceAccount(options.serviceAccountDir);
    const content = renderKubeconfig({
      server: apiServerUrl(options.env),
      serviceAccount,
      namespace: poolNamespace(options, serviceAccount.namespace),
    });
    files.push({ path: join(dir, KUBECONFIG_FILE), content, mode: 0o600 });
  }
  const flat = renderFlatFile({
    hostConfDir: hostDir,
    datastore: options.datastore,
    reconcilerCron: options.reconcilerCron,
    extra: options.extra,
  });
  // root only: the flat file may name etcd credentials (etcd_password, key files); plugin and agent run as root
  files.push({ path: join(dir, FLAT_FILE), content: flat, mode: 0o600 });
  if (options.nodeName !== undefined && options.nodeName !== "")
    files.push({ path: join(dir, NODENAME_FILE), content: `${options.nodeName}\n`, mode: 0o644 });
  return files;
}

/** Writes rendered files, each only when its content differs from what is on disk. */
export function writeConfig(files: readonly ConfigFile[]): Outcomes {
  const outcomes: Outcomes = {};
  for (const dir of new Set(files.map((file) => dirname(file.path)))) {
    ensureDir(dir);
    removeStaleTempFiles(dir);
  }
  for (const file of files) outcomes[file.path] = writeFileAtomic(file.path, file.content, file.mode);
  return outcomes;
}

/** {@link renderConfig} then {@link writeConfig}: what the watcher does on every pass. */
export function syncConfig(options: InstallOptions): Outcomes {
  return writeConfig(renderConfig(options));
}

export interface WatchOptions {
  intervalMs: number;
  signal: AbortSignal;
  /** Called after every pass that wrote something, and with every error (the watcher keeps going). */
  onWrite: (written: string[]) => void;
  onError: (error: Error) => void;
}

/**
 * Re-runs {@link syncConfig} every `intervalMs` until `signal` aborts: a rotated token or CA, or a
 * file changed or removed by someone else, is rewritten within one interval; nothing is written
 * while all is current. An error (a token file briefly missing) is reported and retried.
 */
export async function watchConfig(options: InstallOptions, watch: WatchOptions): Promise<void> {
  while (!watch.signal.aborted) {
    try {
      const written = Object.entries(syncConfig(options))
        .filter(([, outcome]) => outcome === "written")
        .map(([path]) => path);
      if (written.length > 0) watch.onWrite(written);
    } catch (error) {
      watch.onError(error as Error);
    }
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        watch.signal.removeEventListener("abort", wake);
        resolve();
      };
      const timer = setTimeout(wake, watch.intervalMs);
      watch.signal.addEventListener("abort", wake);
    });
  }
}
