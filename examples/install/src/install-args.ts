import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseExtraKeys } from "./install-config.js";
import { InstallError } from "./install-files.js";
import type { InstallOptions } from "./install-run.js";
import type { UninstallOptions } from "./uninstall.js";

// ipamkit-install's command line (install.ts runs it).
/** libcni's result cache (containerd, CRI-O) and Multus' for its delegates, as host paths. */
export const DEFAULT_CNI_CACHE_DIRS = ["/var/lib/cni/results", "/var/lib/cni/multus/results"] as const;

export const USAGE = `usage: ipamkit-install [--watch [--interval-ms 1000] [--uninstall-on-exit] | --uninstall] [options]
  --source DIR              the plugin files (default: this program's directory)
  --host-root DIR           where the host's / is mounted (default /host; / on the host itself)
  --cni-bin-dir PATH        the host's CNI bin dir (default /opt/cni/bin)
  --cni-conf-dir PATH       the host's CNI config dir (default /etc/cni/net.d)
  --binary-name NAME        install the binary under NAME (repeatable; default ipamkit; whereabouts for a drop-in)
  --node-files              also install the Node files (direct mode, for hosts with Node 20)
  --skip-binaries           only the config files (the watcher)
  --datastore STORE         kubernetes (default), etcd or file
  --flat-file-json JSON     extra flat-file keys, e.g. {"agent_socket":"/run/ipamkit/agent.sock"}
  --reconciler-cron EXPR    write reconciler_cron_expression (for Whereabouts' reconciler; default WHEREABOUTS_RECONCILER_CRON, else none)
  --namespace NS            the kubeconfig's namespace (default WHEREABOUTS_NAMESPACE, the pod's, kube-system)
  --service-account-dir DIR the projected token, ca.crt, namespace (default /var/run/secrets/kubernetes.io/serviceaccount)
  --node-name NAME          written to whereabouts.d/nodename (default NODENAME, NODE_NAME)
  --uninstall               remove what the other options install from the host, unless an attachment
                            in the CNI cache still uses it (each file only if still ipamkit's)
  --uninstall-on-exit       with --watch: do that when stopped (SIGTERM)
  --cni-cache-dir PATH      the runtimes' CNI result caches read by --uninstall (repeatable;
                            default ${DEFAULT_CNI_CACHE_DIRS.join(", ")})`;

const DATASTORES = ["kubernetes", "etcd", "file"] as const;

export interface Parsed {
  options: UninstallOptions;
  watch: boolean;
  /** `now`: --uninstall; `on-exit`: --uninstall-on-exit. */
  uninstall: "now" | "on-exit" | undefined;
  skipBinaries: boolean;
  intervalMs: number;
}

/** The command line as options; a bad value is a USAGE error. */
export function parseInstallArgs(args: string[], env: NodeJS.ProcessEnv): Parsed | "help" {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        source: { type: "string" },
        "host-root": { type: "string" },
        "cni-bin-dir": { type: "string" },
        "cni-conf-dir": { type: "string" },
        "binary-name": { type: "string", multiple: true },
        "node-files": { type: "boolean" },
        "skip-binaries": { type: "boolean" },
        datastore: { type: "string" },
        "flat-file-json": { type: "string" },
        "reconciler-cron": { type: "string" },
        namespace: { type: "string" },
        "service-account-dir": { type: "string" },
        "node-name": { type: "string" },
        watch: { type: "boolean" },
        "interval-ms": { type: "string" },
        uninstall: { type: "boolean" },
        "uninstall-on-exit": { type: "boolean" },
        "cni-cache-dir": { type: "string", multiple: true },
        help: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new InstallError("USAGE", (error as Error).message);
  }
  if (values.help === true) return "help";
  const str = (key: string) => values[key] as string | undefined;
  const datastore = str("datastore") ?? "kubernetes";
  if (!(DATASTORES as readonly string[]).includes(datastore))
    throw new InstallError("USAGE", `--datastore: not a datastore: ${JSON.stringify(datastore)} (one of ${DATASTORES.join(", ")})`);
  const intervalMs = Number(str("interval-ms") ?? "1000");
  if (!Number.isInteger(intervalMs) || intervalMs < 10) throw new InstallError("USAGE", "--interval-ms must be an integer >= 10");
  const names = (values["binary-name"] as string[] | undefined) ?? ["ipamkit"];
  const badName = names.find((name) => !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name));
  if (badName !== undefined) throw new InstallError("USAGE", `--binary-name: not a file name: ${JSON.stringify(badName)}`);
  const absolute = (key: string, fallback: string) => {
    const value = str(key) ?? fallback;
    if (!value.startsWith("/")) throw new InstallError("USAGE", `--${key} must be an absolute path: ${JSON.stringify(value)}`);
    return value;
  };
  const uninstall = uninstallMode(values);
  const cacheDirs = (values["cni-cache-dir"] as string[] | undefined) ?? [...DEFAULT_CNI_CACHE_DIRS];
  const relative = cacheDirs.find((dir) => !dir.startsWith("/"));
  if (relative !== undefined) throw new InstallError("USAGE", `--cni-cache-dir must be an absolute path: ${JSON.stringify(relative)}`);
  return {
    options: {
      cniCacheDirs: cacheDirs,
      source: resolve(str("source") ?? dirname(process.argv[1] ?? ".")),
      hostRoot: absolute("host-root", "/host"),
      cniBinDir: absolute("cni-bin-dir", "/opt/cni/bin"),
      cniConfDir: absolute("cni-conf-dir", "/etc/cni/net.d"),
      binaryNames: names,
      nodeFiles: values["node-files"] === true,
      datastore: datastore as InstallOptions["datastore"],
      extra: parseExtraKeys(str("flat-file-json")),
      reconcilerCron: str("reconciler-cron") ?? env.WHEREABOUTS_RECONCILER_CRON,
      namespace: str("namespace"),
      serviceAccountDir: absolute("service-account-dir", "/var/run/secrets/kubernetes.io/serviceaccount"),
      nodeName: str("node-name") ?? env.NODENAME ?? env.NODE_NAME,
      env,
    },
    watch: values.watch === true,
    uninstall,
    skipBinaries: values["skip-binaries"] === true,
    intervalMs,
  };
}

/** --uninstall and --uninstall-on-exit, checked against --watch. */
function uninstallMode(values: Record<string, string | string[] | boolean | undefined>): Parsed["uninstall"] {
  if (values.uninstall === true) {
    if (values.watch === true || values["uninstall-on-exit"] === true)
      throw new InstallError("USAGE", "--uninstall runs once: not with --watch or --uninstall-on-exit");
    return "now";
  }
  if (values["uninstall-on-exit"] === true) {
    if (values.watch !== true) throw new InstallError("USAGE", "--uninstall-on-exit needs --watch");
    return "on-exit";
  }
  return undefined;
}
