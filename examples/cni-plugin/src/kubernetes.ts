// The entry of dist/ipamkit-kubernetes.cjs: the Kubernetes store and @kubernetes/client-node,
// bundled apart from dist/ipamkit so that calls on the file or etcd store never parse them.
export { createKubernetesStore, readNodeSlice, whereaboutsLease } from "@ipamkit/storage-kubernetes";
