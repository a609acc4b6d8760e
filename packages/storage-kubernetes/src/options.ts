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

export function resolveOptions(options: KubernetesStoreOptions): ResolvedOptions {
  let kubeConfig: KubeConfig;
  if (options.kubeconfig instanceof KubeConfig) kubeConfig = options.kubeconfig;
  else {
    kubeConfig = new KubeConfig();
    try {
      if (typeof options.kubeconfig === "string") kubeConfig.loadFromFile(options.kubeconfig);
      else kubeConfig.loadFromDefault();
    } catch (error) {
      const where = typeof options.kubeconfig === "string" ? `kubeconfig ${options.kubeconfig}` : "the default kubeconfig";
      throw new InvalidRequestError(`cannot load ${where}: ${(error as Error).message}`);
    }
  }
  if (kubeConfig.getCurrentCluster() === null) throw new InvalidRequestError("the kubeconfig has no current cluster");
  const contextNamespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
  const namespace = options.namespace ?? (contextNamespace || DEFAULT_NAMESPACE);
  if (!DNS1123_LABEL.test(namespace)) throw new InvalidRequestError(`namespace ${JSON.stringify(namespace)} is not a valid namespace name`);
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const pageSize = options.pageSize ?? 500;
  if (!(requestTimeoutMs > 0)) throw new InvalidRequestError("requestTimeoutMs must be positive");
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new InvalidRequestError("pageSize must be a positive integer");
  return { kubeConfig, namespace, requestTimeoutMs, whereaboutsCompatible: options.whereaboutsCompatible ?? true, pageSize };
}
