import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import { InstallError } from "./install-files.js";

// What the installer writes into <cni conf dir>/whereabouts.d/, in the shapes Whereabouts'
// installer writes (script/lib.sh generateWhereaboutsConf, script/token-watcher.sh), so the plugin
// — ipamkit or Whereabouts — reads them unchanged: the flat file whereabouts.conf, the kubeconfig
// whereabouts.kubeconfig (the pod's ServiceAccount token and CA inline; rewritten when they
// rotate) and the nodename file.

export const CONF_SUBDIR = "whereabouts.d";
export const FLAT_FILE = "whereabouts.conf";
export const KUBECONFIG_FILE = "whereabouts.kubeconfig";
export const NODENAME_FILE = "nodename";

export interface ServiceAccountFiles {
  token: string;
  ca: string;
  /** The pod's namespace (the projected `namespace` file), when present. */
  namespace: string | undefined;
}

/** Reads the projected ServiceAccount files; a missing token or CA is a SERVICE_ACCOUNT error naming the file. */
export function readServiceAccount(dir: string): ServiceAccountFiles {
  const read = (name: string): string => {
    try {
      return readFileSync(join(dir, name), "utf8");
    } catch (error) {
      throw new InstallError("SERVICE_ACCOUNT", `cannot read the ServiceAccount ${name} (${join(dir, name)}): ${(error as Error).message}`);
    }
  };
  const token = read("token").trim();
  if (token === "") throw new InstallError("SERVICE_ACCOUNT", `the ServiceAccount token ${join(dir, "token")} is empty`);
  const ca = read("ca.crt");
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(dir, "namespace"), "utf8").trim() || undefined;
  } catch {
    namespace = undefined;
  }
  return { token, ca, namespace };
}

/**
 * The API server URL from the in-cluster environment (KUBERNETES_SERVICE_HOST, _PORT, and
 * _PROTOCOL, default https); an IPv6 host is bracketed. Missing variables are an ENVIRONMENT error.
 */
export function apiServerUrl(env: NodeJS.ProcessEnv): string {
  const host = env.KUBERNETES_SERVICE_HOST ?? "";
  const port = env.KUBERNETES_SERVICE_PORT ?? "";
  if (host === "" || port === "")
    throw new InstallError(
      "ENVIRONMENT",
      "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (the kubelet sets them in every pod) to write the plugin's kubeconfig",
    );
  if (!/^\d{1,5}$/.test(port)) throw new InstallError("ENVIRONMENT", `KUBERNETES_SERVICE_PORT is not a port: ${JSON.stringify(port)}`);
  const protocol = env.KUBERNETES_SERVICE_PROTOCOL || "https";
  return `${protocol}://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** The plugin's kubeconfig (JSON, which is YAML): one cluster, one token user, one context in `namespace`. */
export function renderKubeconfig(options: { server: string; serviceAccount: ServiceAccountFiles; namespace: string }): string {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "local",
        cluster: { server: options.server, "certificate-authority-data": Buffer.from(options.serviceAccount.ca).toString("base64") },
      },
    ],
    users: [{ name: "ipamkit", user: { token: options.serviceAccount.token } }],
    contexts: [{ name: "ipamkit-context", context: { cluster: "local", user: "ipamkit", namespace: options.namespace } }],
    "current-context": "ipamkit-context",
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

export interface FlatFileOptions {
  /** The `whereabouts.d` directory as the host sees it (the plugin runs on the host). */
  hostConfDir: string;
  datastore: "kubernetes" | "etcd" | "file";
  /**
   * reconciler_cron_expression, for Whereabouts' reconciler (which falls back to it without its
   * ConfigMap). Unset: not written — ipamkit's reconciler reads its ConfigMap, and the plugin
   * warns on every call about a key it does not use.
   */
  reconcilerCron: string | undefined;
  /** Extra keys (agent_socket, agent_required, etcd_*, data_dir …); they win over the defaults. */
  extra: Record<string, unknown>;
}

/** The flat file: Whereabouts' keys (datastore, configuration_path, kubernetes.kubeconfig, reconciler_cron_expression when set) plus `extra`. */
export function renderFlatFile(options: FlatFileOptions): string {
  const base: Record<string, unknown> = {
    datastore: options.datastore,
    configuration_path: options.hostConfDir,
    ...(options.datastore === "kubernetes" ? { kubernetes: { kubeconfig: join(options.hostConfDir, KUBECONFIG_FILE) } } : {}),
    ...(options.reconcilerCron === undefined ? {} : { reconciler_cron_expression: options.reconcilerCron }),
  };
  return `${JSON.stringify({ ...base, ...options.extra }, null, 2)}\n`;
}

/** Parses `--flat-file-json`: a JSON object, else a USAGE error. */
export function parseExtraKeys(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InstallError("USAGE", `--flat-file-json is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new InstallError("USAGE", "--flat-file-json must be a JSON object");
  const journal = (parsed as Record<string, unknown>).agent_journal_dir;
  // the installer creates it on the host (ensureJournalDir): checked before the host is touched
  if (journal !== undefined && (typeof journal !== "string" || !/^(\/[^/]+)+$/.test(journal) || /\/\.\.?(\/|$)/.test(journal)))
    throw new InstallError(
      "USAGE",
      `--flat-file-json: agent_journal_dir must be an absolute path without . or .. segments, not ${JSON.stringify(journal)}`,
    );
  return parsed as Record<string, unknown>;
}
