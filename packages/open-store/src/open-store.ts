import { type IpamConfig, whereaboutsEtcdKeys } from "@ipamkit/cni";
import type { Exclusive, IpamStore } from "@ipamkit/core";
import type { EtcdStoreOptions, WhereaboutsEtcdConfig } from "@ipamkit/storage-etcd";
import type { KubernetesStoreOptions, NodeSliceAnswer, NodeSliceQuery, WhereaboutsLeaseOptions } from "@ipamkit/storage-kubernetes";

export type Datastore = "file" | "etcd" | "kubernetes";
export const DATASTORES: readonly Datastore[] = ["etcd", "kubernetes", "file"];

/** Which store to open, and how. */
export type StoreSpec =
  | { datastore: "file"; dir: string }
  /** etcd: the store's own options, or Whereabouts' `etcd_*` keys (as a CNI config gives them). */
  | { datastore: "etcd"; options: EtcdStoreOptions }
  | { datastore: "etcd"; whereabouts: WhereaboutsEtcdConfig }
  | ({ datastore: "kubernetes" } & Pick<KubernetesStoreOptions, "kubeconfig" | "namespace" | "onWarning">);

/**
 * Where each store's code comes from. Only the chosen store's loader is called, so a program that
 * uses the file store never parses etcd's or Kubernetes' client. The plugin passes loaders of its
 * separately built bundles; everyone else `defaultStoreModules` (`@ipamkit/open-store/modules`).
 */
export interface StoreModules {
  file(): Promise<Pick<typeof import("@ipamkit/storage-file"), "createFileStore">>;
  etcd(): Promise<Pick<typeof import("@ipamkit/storage-etcd"), "createEtcdStore" | "etcdOptionsFromWhereabouts">>;
  kubernetes(): Promise<Pick<typeof import("@ipamkit/storage-kubernetes"), "createKubernetesStore" | "whereaboutsLease" | "readNodeSlice">>;
}

/** Opens stores with one set of modules. */
export interface StoreOpener {
  /** Opens the store `spec` names, loading only its code. */
  open(spec: StoreSpec): Promise<IpamStore>;
  /** Whereabouts' Lease around a call (Kubernetes only); the Kubernetes code is loaded at the first call. */
  whereaboutsLease(options: WhereaboutsLeaseOptions): Exclusive;
  /** A node's slice in a NodeSlicePool (Kubernetes only: node slices); the Kubernetes code is loaded at the first call. */
  readNodeSlice(query: NodeSliceQuery): Promise<NodeSliceAnswer>;
  /** Loads a store's code without opening anything (an agent's `--warm`); throws what `open` would. */
  load(datastore: Datastore): Promise<void>;
}

export function createStoreOpener(modules: StoreModules): StoreOpener {
  return {
    async open(spec) {
      switch (spec.datastore) {
        case "file": {
          const { createFileStore } = await modules.file();
          return createFileStore({ dir: spec.dir });
        }
        case "etcd": {
          const { createEtcdStore, etcdOptionsFromWhereabouts } = await modules.etcd();
          return createEtcdStore("options" in spec ? spec.options : etcdOptionsFromWhereabouts(spec.whereabouts));
        }
        case "kubernetes": {
          const { createKubernetesStore } = await modules.kubernetes();
          const { datastore: _, ...options } = spec;
          return createKubernetesStore(options);
        }
      }
    },
    whereaboutsLease(options) {
      return (fn) => modules.kubernetes().then(({ whereaboutsLease }) => whereaboutsLease(options)(fn));
    },
    async readNodeSlice(query) {
      const { readNodeSlice } = await modules.kubernetes();
      return readNodeSlice(query);
    },
    async load(datastore) {
      await modules[datastore]();
    },
  };
}

/**
 * The store a validated CNI IPAM config selects, as the plugin and the agent open it: the
 * Kubernetes store re-reads its kubeconfig on every call (Whereabouts' token watcher rewrites it
 * when the token rotates); `onWarning` receives the API server's warnings.
 */
export function storeSpecOfConfig(config: IpamConfig, options: { onWarning?: (message: string) => void } = {}): StoreSpec {
  switch (config.datastore) {
    case "file":
      return { datastore: "file", dir: config.dataDir };
    case "etcd":
      return { datastore: "etcd", whereabouts: whereaboutsEtcdKeys(config.etcd) };
    case "kubernetes":
      return {
        datastore: "kubernetes",
        ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
        ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
      };
  }
}
