import { join } from "node:path";
import { CNI_CODES, CniError, type IpamConfig, whereaboutsEtcdKeys } from "@ipamkit/cni";
import type { IpamStore } from "@ipamkit/core";

/** Loads only the store the config selects. */
export async function openStore(config: IpamConfig): Promise<IpamStore> {
  switch (config.datastore) {
    case "file": {
      const { createFileStore } = await import("@ipamkit/storage-file");
      return createFileStore({ dir: config.dataDir });
    }
    case "etcd": {
      let etcd: typeof import("@ipamkit/storage-etcd");
      try {
        etcd = await import("@ipamkit/storage-etcd");
      } catch (error) {
        throw new CniError(
          CNI_CODES.UNSUPPORTED_FIELD,
          `ipam.datastore "etcd": the etcd client (npm package etcd3) cannot be loaded beside this plugin: ${(error as Error).message.split("\n")[0]}`,
        );
      }
      const { createEtcdStore, etcdOptionsFromWhereabouts } = etcd;
      return createEtcdStore(etcdOptionsFromWhereabouts(whereaboutsEtcdKeys(config.etcd)));
    }
    case "kubernetes": {
      const { createKubernetesStore } = loadKubernetesStore();
      return createKubernetesStore({
        // re-read on every call: Whereabouts' token watcher rewrites it when the token rotates
        ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
        onWarning: (message) => process.stderr.write(`${message}\n`),
      });
    }
  }
}

/** dist/ipamkit-kubernetes.cjs, next to this file: the Kubernetes client is parsed only when chosen. */
function loadKubernetesStore(): typeof import("./kubernetes.js") {
  const path = join(__dirname, "ipamkit-kubernetes.cjs");
  try {
    return require(path) as typeof import("./kubernetes.js");
  } catch (error) {
    throw new CniError(
      CNI_CODES.UNSUPPORTED_FIELD,
      `ipam.datastore "kubernetes": the Kubernetes store (${path}) cannot be loaded beside this plugin: ${(error as Error).message.split("\n")[0]}`,
    );
  }
}
