// The entry of dist/ipamkit-etcd.cjs: the etcd store and its client (etcd3, gRPC, protobuf.js),
// bundled apart from dist/ipamkit so that calls on the file or Kubernetes store never parse them,
// and loaded with V8's code cache. The build inlines etcd's gRPC schema (build.mjs), so the bundle
// needs no .proto file and no node_modules beside it.
export { createEtcdStore, etcdOptionsFromWhereabouts } from "@ipamkit/storage-etcd";
