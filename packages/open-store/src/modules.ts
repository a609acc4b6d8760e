import type { IpamStore } from "@ipamkit/core";
import { createStoreOpener, type StoreModules, type StoreSpec } from "./open-store.js";

/** Each store's package, imported when first chosen (programs that run from node_modules or a bundle with code splitting). */
export const defaultStoreModules: StoreModules = {
  file: () => import("@ipamkit/storage-file"),
  etcd: () => import("@ipamkit/storage-etcd"),
  kubernetes: () => import("@ipamkit/storage-kubernetes"),
};

const opener = createStoreOpener(defaultStoreModules);

/** Opens the store `spec` names with {@link defaultStoreModules}. */
export function openStore(spec: StoreSpec): Promise<IpamStore> {
  return opener.open(spec);
}
