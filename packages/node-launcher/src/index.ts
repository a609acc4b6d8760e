export { type AgentPod, prepareAgentPod } from "./agent-pod.js";
export {
  findNodeBinaries,
  NODE_BUILD_DIR,
  NODE_BUILD_SCRIPT,
  type NodeBinaries,
  NodeBinariesMissingError,
  nodeBinaryPaths,
} from "./binaries.js";
export { type Cluster, type ClusterNetworks, type ClusterOptions, clusterNetworks, startCluster } from "./cluster.js";
export {
  CLUSTER_BUILD_SCRIPT,
  type ClusterBinaries,
  ClusterBinariesMissingError,
  clusterBinaryPaths,
  findClusterBinaries,
  kubectlBinary,
  MULTUS_BUILD_SCRIPT,
} from "./cluster-binaries.js";
export { type ClusterReport, checkCluster, netnsAddresses, type PodAddress, podAddresses } from "./cluster-checks.js";
export { type ChartValues, type ClusterIpam, RELEASE } from "./cluster-ipam.js";
export type { ClusterNode } from "./cluster-node.js";
export { createSetAndWait, forceDelete, scaleAndWait, setPods, statefulSet, waitForSet } from "./cluster-pods.js";
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
