export { mapEtcdError, STORE_NAME } from "./errors.js";
export { createEtcdStore, DEFAULT_PREFIX } from "./etcd-store.js";
export type { Layout } from "./layout.js";
export { layout } from "./layout.js";
export type { EtcdStoreOptions, WhereaboutsEtcdConfig } from "./options.js";
export { etcdOptionsFromWhereabouts } from "./options.js";
