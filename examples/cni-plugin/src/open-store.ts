import { join } from "node:path";
import { CNI_CODES, CniError, type IpamConfig, whereaboutsEtcdKeys } from "@ipamkit/cni";
import type { Exclusive, IpamStore } from "@ipamkit/core";
import { requireBundle } from "./bundle-loader.js";

export type Datastore = IpamConfig["datastore"];
export const DATASTORES: readonly Datastore[] = ["etcd", "kubernetes", "file"];

/** Loads only the store the config selects. */
export async function openStore(config: IpamConfig): Promise<IpamStore> {
  switch (config.datastore) {
    case "file": {
      const { createFileStore } = await loadFileStore();
      return createFileStore({ dir: config.dataDir });
    }
    case "etcd": {
      const { createEtcdStore, etcdOptionsFromWhereabouts } = loadEtcdStore();
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

/**
 * Whereabouts' Lease, held around an ADD's writes when the config sets `whereabouts_lease` (config
 * validation allows it only with the Kubernetes store). `deadline` (epoch ms): give up acquiring
 * then, with a retryable error naming the Lease; default 60 s from each acquisition's start.
 */
export function openExclusive(config: IpamConfig, identity: string, deadline?: number): Exclusive {
  const { whereaboutsLease } = loadKubernetesStore();
  return whereaboutsLease({
    ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
    identity,
    ...(deadline === undefined ? {} : { deadline }),
  });
}

/**
 * Loads a datastore's code (its client library) without opening anything: what an agent does at
 * start (`--warm`), so that its node's first call does not pay ~0.15 s of CPU for it. Throws what
 * `openStore` would answer when the code cannot be loaded.
 */
export async function loadStoreCode(datastore: Datastore): Promise<void> {
  if (datastore === "file") await loadFileStore();
  else if (datastore === "etcd") loadEtcdStore();
  else loadKubernetesStore();
}

function loadFileStore(): Promise<typeof import("@ipamkit/storage-file")> {
  return import("@ipamkit/storage-file");
}

/** dist/ipamkit-etcd.cjs, next to this file: etcd's client is parsed only when chosen (with its code cache). */
function loadEtcdStore(): typeof import("./etcd.js") {
  const path = join(__dirname, "ipamkit-etcd.cjs");
  try {
    return requireBundle(path).exports as typeof import("./etcd.js");
  } catch (error) {
    throw new CniError(
      CNI_CODES.UNSUPPORTED_FIELD,
      `ipam.datastore "etcd": the etcd store (${path}) cannot be loaded beside this plugin: ${(error as Error).message.split("\n")[0]}`,
    );
  }
}

/** dist/ipamkit-kubernetes.cjs, next to this file: the Kubernetes client is parsed only when chosen (with its code cache). */
function loadKubernetesStore(): typeof import("./kubernetes.js") {
  const path = join(__dirname, "ipamkit-kubernetes.cjs");
  try {
    return requireBundle(path).exports as typeof import("./kubernetes.js");
  } catch (error) {
    throw new CniError(
      CNI_CODES.UNSUPPORTED_FIELD,
      `ipam.datastore "kubernetes": the Kubernetes store (${path}) cannot be loaded beside this plugin: ${(error as Error).message.split("\n")[0]}`,
    );
  }
}
