import { readFileSync } from "node:fs";
import type { IpamStore } from "@ipamkit/core";
import { openStore as openSpec } from "@ipamkit/open-store/modules";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Options } from "./args.js";

/** The store the options choose (@ipamkit/open-store); only its client is loaded. */
export async function openStore(options: Options, kubeConfig: KubeConfig, namespace: string): Promise<IpamStore> {
  switch (options.datastore) {
    case "kubernetes":
      return openSpec({ datastore: "kubernetes", kubeconfig: kubeConfig, namespace });
    case "etcd": {
      const e = options.etcd;
      const tls = e.caFile ?? e.certFile ?? e.keyFile;
      return openSpec({
        datastore: "etcd",
        options: {
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
        },
      });
    }
    case "file":
      return openSpec({ datastore: "file", dir: options.dataDir ?? "" });
  }
}
