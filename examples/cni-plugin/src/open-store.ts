import { join } from "node:path";
import { CNI_CODES, CniError, type IpamConfig, type NodeSliceAnswer } from "@ipamkit/cni";
import type { Exclusive, IpamStore, PoolRef } from "@ipamkit/core";
import { createStoreOpener, type Datastore, storeSpecOfConfig } from "@ipamkit/open-store";
import { requireBundle } from "./bundle-loader.js";

export type { Datastore } from "@ipamkit/open-store";
export { DATASTORES } from "@ipamkit/open-store";

/** The one store opener (@ipamkit/open-store), with this plugin's loaders: each store's own bundle beside it. */
const opener = createStoreOpener({
  file: loadFileStore,
  etcd: async () => loadEtcdStore(),
  kubernetes: async () => loadKubernetesStore(),
});

/** Loads only the store the config selects. */
export function openStore(config: IpamConfig): Promise<IpamStore> {
  return opener.open(storeSpecOfConfig(config, { onWarning: (message) => process.stderr.write(`${message}\n`) }));
}

/**
 * Whereabouts' Lease, held around an ADD's writes on the Kubernetes store: always with
 * `whereabouts_lease: true`, and by default ("auto") only while Whereabouts is seen writing it.
 * `deadline` (epoch ms): give up acquiring then, with a retryable error naming the Lease; default
 * 60 s from each acquisition's start. `pool`: the node's slice pool on a network with node slices
 * (the Lease is then named after it, as Whereabouts names it).
 */
export function openExclusive(config: IpamConfig, identity: string, deadline?: number, pool?: PoolRef): Exclusive {
  return opener.whereaboutsLease({
    ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
    identity,
    ...(deadline === undefined ? {} : { deadline }),
    ...(pool === undefined ? {} : { pool }),
    ...(config.kubernetes.whereaboutsLease === "auto" ? { auto: {} } : {}),
  });
}

/** A node's slice of a network with node slices: its NodeSlicePool, read through the config's kubeconfig. */
export function readNodeSlice(config: IpamConfig, query: { name: string; node: string }): Promise<NodeSliceAnswer> {
  return opener.readNodeSlice({
    ...(config.kubernetes.kubeconfig === undefined ? {} : { kubeconfig: config.kubernetes.kubeconfig }),
    ...query,
  });
}

/**
 * Loads a datastore's code (its client library) without opening anything: what an agent does at
 * start (`--warm`), so that its node's first call does not pay ~0.15 s of CPU for it. Throws what
 * `openStore` would answer when the code cannot be loaded.
 */
export function loadStoreCode(datastore: Datastore): Promise<void> {
  return opener.load(datastore);
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
