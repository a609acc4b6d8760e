export { type AgentPod, prepareAgentPod } from "./agent-pod.js";
export {
  findNodeBinaries,
  NODE_BUILD_DIR,
  NODE_BUILD_SCRIPT,
  type NodeBinaries,
  NodeBinariesMissingError,
  nodeBinaryPaths,
} from "./binaries.js";
export {
  bridgeConflist,
  containerdToml,
  kubeletConfig,
  macvlanConflist,
  type NetworkOptions,
  type NodeIpam,
  type NodeLayout,
  nodeLayout,
} from "./config.js";
export { CHART, HELM_BUILD_SCRIPT, helmBinary, renderChart } from "./helm.js";
export { HOST_LOCK, lockHost } from "./host-lock.js";
export { type HostState, NODE_HOST_PATHS, NODE_SYSCTLS, restoreHost, snapshotHost } from "./host-state.js";
export { buildIpamkitImage, chartVersion, INSTALL_DIST, type IpamkitImage, PLUGIN_DIST } from "./image.js";
export { type NodeOptions, type RealNode, startNode } from "./launcher.js";
export { type PauseImage, pauseImage } from "./pause.js";
