import { readFileSync } from "node:fs";
import { InvalidRequestError } from "@ipamkit/core";
import { KubeConfig } from "@kubernetes/client-node";

export interface KubernetesStoreOptions {
  /**
   * A kubeconfig file (read on every createKubernetesStore call — Whereabouts' token watcher
   * rewrites it), a loaded KubeConfig, or nothing: client-node's defaults (`KUBECONFIG`,
   * `~/.kube/config`, then the in-cluster service account).
   */
  kubeconfig?: string | KubeConfig;
  /** The namespace of the pools; default: the kubeconfig context's namespace, else `kube-system`. */
  namespace?: string;
  /** Deadline of each API request in ms (default 10 000); a timeout is StoreUnavailableError. */
  requestTimeoutMs?: number;
  /**
   * Keep pools readable by Whereabouts (default true): refuse to write a new allocation whose
   * offset is ≥ 2^63 (Whereabouts drops such keys). Turn off once no Whereabouts binary or
   * reconciler reads the pools; ipamkit itself reads every offset exactly.
   */
  whereaboutsCompatible?: boolean;
  /** LIST page size (default 500). */
  pageSize?: number;
  /** Where warnings go (default: process.emitWarning), e.g. the API server pruning ipamkit's fields. */
  onWarning?: (message: string) => void;
}

/** Whereabouts' fallback when the kubeconfig context names no namespace (PR #221). */
export const DEFAULT_NAMESPACE = "kube-system";

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface ResolvedOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  requestTimeoutMs: number;
  whereaboutsCompatible: boolean;
  pageSize: number;
}

/** Loads a kubeconfig: a file (read now), a loaded KubeConfig, or client-node's defaults. */
export function loadKubeConfig(kubeconfig: string | KubeConfig | undefined): KubeConfig {
  if (kubeconfig instanceof KubeConfig) return kubeconfig;
  const kubeConfig = new KubeConfig();
  try {
    if (typeof kubeconfig === "string") kubeConfig.loadFromFile(kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (error) {
    const where = typeof kubeconfig === "string" ? `kubeconfig ${kubeconfig}` : "the default kubeconfig";
    throw new InvalidRequestError(`cannot load ${where}: ${loadFailure(error, kubeconfig)}`);
  }
  if (kubeConfig.getCurrentCluster() === null) throw new InvalidRequestError("the kubeconfig has no current cluster");
  return kubeConfig;
}

/** Keys whose values in a kubeconfig are credentials. */
const CREDENTIAL = /^\s*-?\s*"?(token|password|client-key-data|id-token|refresh-token|access-token|secret)"?\s*:\s*"?([^"\s,}]+)/i;

/**
 * Why a kubeconfig did not load, without its credentials: the YAML parser's message quotes the
 * lines around a syntax error (a token among them), so only its first line (reason and position)
 * is kept, and any credential value of the file still in it is redacted.
 */
function loadFailure(error: unknown, path: string | undefined): string {
  let message = (error instanceof Error ? error.message : String(error)).split("\n")[0]?.trim() ?? "";
  if (path === undefined) return message;
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return message;
  }
  for (const line of text.split(/[\n,{]/)) {
    const value = CREDENTIAL.exec(line)?.[2];
    if (value !== undefined && value.length >= 4) message = message.split(value).join("<redacted>");
  }
  return message;
}

/** The pool namespace as the CNI plugin resolves it: explicit, else the context's, else kube-system. */
export function resolveNamespace(kubeConfig: KubeConfig, namespace?: string): string {
  const contextNamespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
  const resolved = namespace ?? (contextNamespace || DEFAULT_NAMESPACE);
  if (!DNS1123_LABEL.test(resolved)) throw new InvalidRequestError(`namespace ${JSON.stringify(resolved)} is not a valid namespace name`);
  return resolved;
}

export function resolveOptions(options: KubernetesStoreOptions): ResolvedOptions {
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const namespace = resolveNamespace(kubeConfig, options.namespace);
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const pageSize = options.pageSize ?? 500;
  if (!(requestTimeoutMs > 0)) throw new InvalidRequestError("requestTimeoutMs must be positive");
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new InvalidRequestError("pageSize must be a positive integer");
  return { kubeConfig, namespace, requestTimeoutMs, whereaboutsCompatible: options.whereaboutsCompatible ?? true, pageSize };
}
