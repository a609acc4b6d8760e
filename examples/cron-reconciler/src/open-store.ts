import { readFileSync } from "node:fs";
import type { IpamStore } from "@ipamkit/core";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Options } from "./args.js";

/** The store the options choose; only its client is loaded. */
export async function openStore(options: Options, kubeConfig: KubeConfig, namespace: string): Promise<IpamStore> {
  switch (options.datastore) {
    case "kubernetes": {
      const { createKubernetesStore } = await import("@ipamkit/storage-kubernetes");
      return createKubernetesStore({ kubeconfig: kubeConfig, namespace });
    }
    case "etcd": {
      const { createEtcdStore } = await import("@ipamkit/storage-etcd");
      const e = options.etcd;
      const tls = e.caFile ?? e.certFile ?? e.keyFile;
      return createEtcdStore({
        ...(e.endpoints === undefined ? {} : { endpoints: e.endpoints }),
        ...(e.username === undefined ? {} : { username: e.username }),
        ...(e.passwordFile === undefined ? {} : { password: readFileSync(e.passwordFile, "utf8").trim() }),
        ...(tls === undefined
          ? {}
          : {
              tls: {
                ...(e.caFile === undefined ? {} : { caFile: e.caFile }),
                ...(e.certFile === undefined ? {} : { certFile: e.certFile }),
                ...(e.keyFile === undefined ? {} : { keyFile: e.keyFile }),
              },
            }),
      });
    }
    case "file": {
      const { createFileStore } = await import("@ipamkit/storage-file");
      return createFileStore({ dir: options.dataDir ?? "" });
    }
  }
}
