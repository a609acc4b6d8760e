export interface KubeconfigOptions {
  /** The context's namespace. */
  namespace?: string;
  /** The user entry's name (default "kube-test-server"). */
  user?: string;
}

/**
 * A kubeconfig for the server, as JSON (which is YAML). `insecure-skip-tls-verify` is set because
 * @kubernetes/client-node refuses a plain-http server without it.
 */
export function kubeconfigText(url: string, token: string | undefined, options: KubeconfigOptions = {}): string {
  const name = "kube-test-server";
  const user = options.user ?? name;
  return `${JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name, cluster: { server: url, "insecure-skip-tls-verify": true } }],
      users: [{ name: user, user: token === undefined ? {} : { token } }],
      contexts: [{ name, context: { cluster: name, user, ...(options.namespace === undefined ? {} : { namespace: options.namespace }) } }],
      "current-context": name,
      preferences: {},
    },
    null,
    2,
  )}\n`;
}
