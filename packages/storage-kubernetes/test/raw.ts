import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, IPPOOL, type Kind, type KubeObject, VERSION } from "../src/objects.js";

/** Direct custom-object access for tests: what another writer (Whereabouts, an operator) would do. */
export function rawObjects(kubeConfig: KubeConfig, namespace: string) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const at = (kind: Kind) => ({ group: GROUP, version: VERSION, namespace, plural: kind.plural });
  return {
    create: (kind: Kind, body: KubeObject) => api.createNamespacedCustomObject({ ...at(kind), body }) as Promise<KubeObject>,
    get: (kind: Kind, name: string) => api.getNamespacedCustomObject({ ...at(kind), name }) as Promise<KubeObject>,
    replace: (kind: Kind, body: KubeObject) =>
      api.replaceNamespacedCustomObject({ ...at(kind), name: body.metadata?.name ?? "", body }) as Promise<KubeObject>,
    list: async (kind: Kind) => ((await api.listNamespacedCustomObject(at(kind))) as { items: KubeObject[] }).items,
    pool: (name: string) => api.getNamespacedCustomObject({ ...at(IPPOOL), name }) as Promise<KubeObject>,
  };
}
