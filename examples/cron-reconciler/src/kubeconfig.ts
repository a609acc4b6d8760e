import { existsSync } from "node:fs";
import { join } from "node:path";
import { InvalidRequestError } from "@ipamkit/core";
import { loadKubeConfig } from "@ipamkit/storage-kubernetes";
import type { KubeConfig } from "@kubernetes/client-node";

/** Where a pod's service account token is mounted (the in-cluster configuration). */
export const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/**
 * The kubeconfig the program uses and where it came from: `--kubeconfig`, else `KUBECONFIG`, else
 * `$HOME/.kube/config`, else the pod's service account (kubectl's order). When none is there the
 * Kubernetes client falls back to `http://localhost:8080` and fails with "HTTP protocol is not
 * allowed when skipTLSVerify…", which names neither; this says where it looked instead.
 */
export function loadProgramKubeConfig(
  path: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { kubeConfig: KubeConfig; source: string } {
  if (path !== undefined) return { kubeConfig: loadKubeConfig(path), source: path };
  if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== "")
    return { kubeConfig: loadKubeConfig(undefined), source: `KUBECONFIG=${env.KUBECONFIG}` };
  const home = env.HOME === undefined || env.HOME === "" ? undefined : join(env.HOME, ".kube", "config");
  if (home !== undefined && existsSync(home)) return { kubeConfig: loadKubeConfig(undefined), source: home };
  if (existsSync(SERVICE_ACCOUNT_TOKEN)) return { kubeConfig: loadKubeConfig(undefined), source: "in-cluster service account" };
  throw new InvalidRequestError(
    `no kubeconfig found: --kubeconfig not given, KUBECONFIG not set, ${home === undefined ? "HOME not set" : `no ${home}`}, and no service account token at ${SERVICE_ACCOUNT_TOKEN} (not in a pod); the reconciler lists pods through the Kubernetes API whatever --datastore is, so give --kubeconfig PATH`,
  );
}
