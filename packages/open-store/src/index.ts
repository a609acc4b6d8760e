export type { Datastore, StoreModules, StoreOpener, StoreSpec } from "./open-store.js";
export { createStoreOpener, DATASTORES, storeSpecOfConfig } from "./open-store.js";
