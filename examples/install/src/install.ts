import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { parseExtraKeys } from "./install-config.js";
import { InstallError } from "./install-files.js";
import { type InstallOptions, installBinaries, renderConfig, watchConfig, writeConfig } from "./install-run.js";

// ipamkit-install: the DaemonSet's installer. Run once (the init container) it installs the plugin
// into the host's CNI bin dir and writes whereabouts.d/{whereabouts.conf,whereabouts.kubeconfig,
// nodename}; with --watch (the watcher container) it keeps those files current, rewriting the
// kubeconfig whenever the projected ServiceAccount token or CA rotates.
export const USAGE = `usage: ipamkit-install [--watch [--interval-ms 1000]] [options]
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
  --node-name NAME          written to whereabouts.d/nodename (default NODENAME, NODE_NAME)`;

const DATASTORES = ["kubernetes", "etcd", "file"] as const;

interface Parsed {
  options: InstallOptions;
  watch: boolean;
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
  return {
    options: {
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
    skipBinaries: values["skip-binaries"] === true,
    intervalMs,
  };
}

async function main(): Promise<number> {
  let parsed: Parsed | "help";
  try {
    parsed = parseInstallArgs(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`ipamkit-install: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (parsed === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const logger = pino({ base: { component: "ipamkit-install" } });
  const { options } = parsed;
  try {
    const config = renderConfig(options); // first: a missing token or environment fails before the host is touched
    if (!parsed.skipBinaries) logger.info({ files: installBinaries(options) }, "plugin installed");
    logger.info({ files: writeConfig(config) }, "configuration written");
  } catch (error) {
    const code = error instanceof InstallError ? error.code : "FAILED";
    process.stderr.write(`ipamkit-install: ${code}: ${(error as Error).message}\n`);
    return 1;
  }
  if (!parsed.watch) return 0;
  const stop = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => stop.abort());
  logger.info({ intervalMs: parsed.intervalMs }, "watching the ServiceAccount token and CA");
  await watchConfig(options, {
    intervalMs: parsed.intervalMs,
    signal: stop.signal,
    onWrite: (written) => logger.info({ written }, "configuration rewritten"),
    onError: (error) => logger.warn(`cannot refresh the configuration (retrying): ${error.message}`),
  });
  logger.info("stopped");
  return 0;
}

void main().then((code) => {
  process.exitCode = code;
});
