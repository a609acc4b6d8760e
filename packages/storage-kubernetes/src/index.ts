export { keepAliveTransport, retryOnReset } from "./api.js";
export { apiFailure, mapKubeError, STORE_NAME } from "./errors.js";
export { WHEREABOUTS_OFFSET_LIMIT } from "./ippool.js";
export { createKubernetesStore } from "./kubernetes-store.js";
export { ipPoolName, normalizeRange, reservationName } from "./names.js";
export { ANNOTATION, API_VERSION, GROUP, IPPOOL, RESERVATION, VERSION } from "./objects.js";
export type { KubernetesStoreOptions } from "./options.js";
export { DEFAULT_NAMESPACE, loadKubeConfig, resolveNamespace } from "./options.js";
