import type { IpamConfig } from "@ipamkit/cni";
import { CNI_CODES, CniError } from "@ipamkit/cni";
import type { IpamStore } from "@ipamkit/core";

/** Loads only the store the config selects. */
export async function openStore(config: IpamConfig): Promise<IpamStore> {
  switch (config.datastore) {
    case "file": {
      const { createFileStore } = await import("@ipamkit/storage-file");
      return createFileStore({ dir: config.dataDir });
    }
    case "etcd": {
      let etcd: typeof import("@ipamkit/storage-etcd");
      try {
        etcd = await import("@ipamkit/storage-etcd");
      } catch (error) {
        throw new CniError(
          CNI_CODES.UNSUPPORTED_FIELD,
          `ipam.datastore "etcd": the etcd client (npm package etcd3) cannot be loaded beside this plugin: ${(error as Error).message.split("\n")[0]}`,
        );
      }
      const { createEtcdStore, etcdOptionsFromWhereabouts } = etcd;
      const e = config.etcd;
      return createEtcdStore(
        etcdOptionsFromWhereabouts({
          ...(e.host === undefined ? {} : { etcd_host: e.host }),
          ...(e.username === undefined ? {} : { etcd_username: e.username }),
          ...(e.password === undefined ? {} : { etcd_password: e.password }),
          ...(e.keyFile === undefined ? {} : { etcd_key_file: e.keyFile }),
          ...(e.certFile === undefined ? {} : { etcd_cert_file: e.certFile }),
          ...(e.caCertFile === undefined ? {} : { etcd_ca_cert_file: e.caCertFile }),
        }),
      );
    }
    case "kubernetes":
      throw new CniError(
        CNI_CODES.UNSUPPORTED_FIELD,
        'ipam.datastore "kubernetes": the Kubernetes store is not part of this build yet; use "file" or "etcd"',
      );
  }
}
