export type { Status, StatusCause, StatusDetails } from "./errors.js";
export { MAX_REQUEST_BODY_BYTES } from "./http.js";
export { SERVED_KINDS, type ServedKind } from "./kinds.js";
export type { KubeconfigOptions } from "./kubeconfig.js";
export {
  DEFAULT_MAX_OBJECT_BYTES,
  type Fault,
  type KubeTestServer,
  type KubeTestServerOptions,
  type KubeTestServerStats,
  startKubeTestServer,
} from "./server.js";
