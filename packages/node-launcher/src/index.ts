export {
  findNodeBinaries,
  NODE_BUILD_DIR,
  NODE_BUILD_SCRIPT,
  type NodeBinaries,
  NodeBinariesMissingError,
  nodeBinaryPaths,
} from "./binaries.js";
export { conflist, containerdToml, kubeletConfig, type NodeLayout, nodeLayout } from "./config.js";
export { HOST_LOCK, lockHost } from "./host-lock.js";
export { type HostState, NODE_HOST_PATHS, NODE_SYSCTLS, restoreHost, snapshotHost } from "./host-state.js";
export { type NodeOptions, PLUGIN_DIST, type RealNode, startNode } from "./launcher.js";
export { type PauseImage, pauseImage } from "./pause.js";
